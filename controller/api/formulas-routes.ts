import {
  Body,
  Consumes,
  Controller,
  Delete,
  Get,
  Path,
  Post,
  Put,
  Query,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { OKResponseBody } from '../../shared/dto/common.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  FeedBody,
  FormulaCookInputBody,
  FormulaCookResponse,
  FormulaDetailResponse,
  FormulaListBody,
  FormulaPreviewBody,
  FormulaRunsResponse,
  FormulaSourceOutputBody,
  FormulaValidateOutputBody,
} from '../../shared/dto/formulas.js';
import { decodeToken, encodeToken, invalidToken } from '../../shared/http/page-token.js';
import { Problem } from '../../shared/http/problem.js';
import { decodeBeadCursor, encodeBeadCursor } from '../beads/page-token.js';
import type { CityRuntime } from '../city-runtime.js';
import { unknownAssignees } from '../formulas/formula-catalog.js';
import { compileFormula } from '../formulas/formula-compile.js';
import { FORMULA_NAME } from '../formulas/formula-file.js';
import { formulaDetail } from '../formulas/formula-views.js';
import { formulaSummary, recentRuns } from '../molecules/formula-runs.js';
import { compileForRun, formulaErrors, formulaOrProblem, launchFormula } from '../formulas/launch.js';

const FEED_LIMIT = 50;

/**
 * @param cityName City name.
 * @param name Formula name (`formulas/<name>.toml`).
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Formulas')
@Response<ErrorModel>(404, 'City not running, or no such formula (`formula-not-found`)')
export class FormulasRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's formulas — `formulas/<name>.toml` (or `<name>.formula.toml`) of the city, then of each rig (a
   * later layer wins a name) — each with its vars and its recent runs. A file that does not validate is listed
   * with its `errors` and cannot run.
   * @summary List formulas
   * @param _scopeKind `city` or `rig` (every formula the city sees is listed either way).
   * @param _scopeRef The rig, for `scope_kind=rig`.
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('formulas')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public async listFormulas(
    @Path('cityName') _cityName: string,
    @Query('scope_kind') _scopeKind?: string,
    @Query('scope_ref') _scopeRef?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): Promise<FormulaListBody> {
    const entries = this.city.formulas.list();
    let after = '';
    if (cursor !== undefined) {
      const { name } = decodeToken(cursor, 'fm');
      if (typeof name !== 'string') throw invalidToken();
      after = name;
    }
    const size = limit || 100;
    const rest = entries.filter((e) => e.name > after);
    const page = rest.slice(0, size);
    const broken = entries.filter((e) => e.errors.length);
    return {
      items: page.map((entry) => formulaSummary(entry, this.city.runs)),
      total: entries.length,
      partial: false,
      ...(broken.length ? { partial_errors: broken.flatMap((e) => e.errors) } : {}),
      ...(rest.length > size ? { next_cursor: encodeToken('fm', { name: page.at(-1)!.name }) } : {}),
    };
  }

  /**
   * Recent runs (molecules) of every formula, newest first.
   * @summary Formula run feed
   * @param limit At most this many (default 50).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('formulas/feed')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public async formulaFeed(
    @Path() cityName: string,
    @Query('scope_kind') _scopeKind?: string,
    @Query('scope_ref') _scopeRef?: string,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): Promise<FeedBody> {
    const size = limit || FEED_LIMIT;
    const roots = this.city.runs.roots({ limit: size + 1, before: cursor ? decodeBeadCursor(cursor) : undefined });
    const page = roots.slice(0, size);
    return {
      items: page.map((root) => this.city.runs.feedItem(root)),
      partial: false,
      ...(roots.length > size ? { next_cursor: encodeBeadCursor(page.at(-1)!) } : {}),
    };
  }

  /**
   * A formula: its vars, its steps as compiled with their defaults (every step, whatever its condition), the
   * edges among them (`from` waits for `to`), and the same graph as a preview.
   * @summary Get a formula
   * @param target The agent its steps would be routed to (for the preview; optional here).
   */
  @Get('formulas/{name}')
  public async getFormula(
    @Path() cityName: string,
    @Path() name: string,
    @Query() target?: string,
    @Query('scope_kind') _scopeKind?: string,
    @Query('scope_ref') _scopeRef?: string,
  ): Promise<FormulaDetailResponse> {
    return this.detail(name, target);
  }

  /**
   * The same as `GET /formulas/{name}`.
   * @summary Get a formula (singular path)
   */
  @Get('formula/{name}')
  public async getFormulaSingular(
    @Path() cityName: string,
    @Path() name: string,
    @Query() target?: string,
    @Query('scope_kind') _scopeKind?: string,
    @Query('scope_ref') _scopeRef?: string,
  ): Promise<FormulaDetailResponse> {
    return this.detail(name, target);
  }

  /**
   * The formula's file as it is on disk.
   * @summary Get a formula's TOML
   */
  @Get('formulas/{name}/source')
  public async formulaSource(@Path() cityName: string, @Path() name: string): Promise<FormulaSourceOutputBody> {
    const entry = formulaOrProblem(this.city.formulas, name);
    const source = this.city.formulas.source(entry);
    // A file a link leads out of its pack, rig or city is never read (and not listed).
    if (source === undefined) throw new Problem('formula-not-found', `not_found: formula not found: ${name}`);
    return { name, source };
  }

  /**
   * Writes `formulas/<name>.toml` from the body — the TOML text itself (`application/octet-stream`,
   * `text/plain` or `application/toml`, at most 1 MiB). A file that does not validate is refused (422, every
   * error named) and nothing is written; `GET /formulas` lists the new one at once.
   * @summary Write a formula
   */
  @Put('formulas/{name}')
  @Consumes('application/octet-stream')
  @Response<ErrorModel>(413, 'Body over 1 MiB')
  @Response<ErrorModel>(422, 'The formula does not validate (every error in `errors`), or a bad name')
  public async putFormula(
    @Path() cityName: string,
    @Path() name: string,
    @Body() body: string,
  ): Promise<OKResponseBody> {
    checkName(name);
    const text = textOf(body);
    const { errors } = this.city.formulas.check(text, name);
    if (errors.length) throw formulaErrors(name, errors);
    this.city.formulas.write(name, text);
    return { status: 'ok' };
  }

  /**
   * Removes the formula's file. Runs made from it go on.
   * @summary Delete a formula
   */
  @Delete('formulas/{name}')
  public async deleteFormula(@Path() cityName: string, @Path() name: string): Promise<OKResponseBody> {
    if (!this.city.formulas.remove(name))
      throw new Problem('formula-not-found', `not_found: formula not found: ${name}`);
    return { status: 'ok' };
  }

  /**
   * Validates TOML text as formula `name` without writing it: every error, each naming the file, step and field
   * (syntax, fields, unknown vars, `needs` to a missing step, cycles, an `assignee` that is no agent of the city).
   * @summary Validate a formula
   */
  @Post('formulas/{name}/validate')
  @Consumes('application/octet-stream')
  @Response<ErrorModel>(413, 'Body over 1 MiB')
  public async validateFormula(
    @Path() cityName: string,
    @Path() name: string,
    @Body() body: string,
  ): Promise<FormulaValidateOutputBody> {
    checkName(name);
    const { def, errors } = this.city.formulas.check(textOf(body), name);
    if (def)
      errors.push(
        ...unknownAssignees(
          def,
          this.city.agents.map((a) => a.name),
        ),
      );
    return errors.length ? { valid: false, errors } : { valid: true };
  }

  /**
   * The graph a run with these vars would create — conditions decided, loops unrolled — without creating
   * anything. A missing required var, an unknown var or a value its enum or pattern refuses is a 422.
   * @summary Preview a formula's run
   */
  @Post('formulas/{name}/preview')
  @Response<ErrorModel>(
    422,
    'The formula does not validate, or the vars do not fit it (among them, vars filling its texts past the limit of characters)',
  )
  public async previewFormula(
    @Path() cityName: string,
    @Path() name: string,
    @Body() body: FormulaPreviewBody,
  ): Promise<FormulaDetailResponse> {
    const entry = formulaOrProblem(this.city.formulas, name);
    const compiled = compileForRun(
      this.city.formulas,
      name,
      body.vars ?? {},
      await this.city.runVars.of({ target: body.target }),
    );
    return formulaDetail(entry, compiled);
  }

  /**
   * How many runs the formula has had, and the latest.
   * @summary A formula's runs
   * @param limit Recent runs listed (default 5).
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('formulas/{name}/runs')
  public async formulaRuns(
    @Path() cityName: string,
    @Path() name: string,
    @Query('scope_kind') _scopeKind?: string,
    @Query('scope_ref') _scopeRef?: string,
    @Query() limit?: number,
  ): Promise<FormulaRunsResponse> {
    formulaOrProblem(this.city.formulas, name);
    const { count, recent } = recentRuns(this.city.runs, name, limit || 5);
    return { formula: name, run_count: count, recent_runs: recent, partial: false };
  }

  /**
   * Makes a run (a molecule) of the formula: its root bead, a bead per step with `blocks` edges from `needs`, a
   * finalize step after every last step, and the root after finalize. Its work steps are routed to `target` when
   * given (else they wait in `GET /beads/ready` for anyone). A missing required var or a bad value is a 422 and
   * nothing is created.
   * @summary Cook a formula (start a run)
   */
  @Post('formulas/{name}/cook')
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(
    422,
    'The formula does not validate, or the vars do not fit it (among them, vars filling its texts past the limit of characters)',
  )
  public async cookFormula(
    @Path() cityName: string,
    @Path() name: string,
    @Body() body: FormulaCookInputBody,
  ): Promise<FormulaCookResponse> {
    if (body.target !== undefined && !this.city.agent(body.target)) {
      throw new Problem('agent-not-found', `not_found: agent not found: ${body.target}`);
    }
    if (body.attached_bead_id !== undefined) this.city.beads.get(body.attached_bead_id);
    const run = await this.city.runVars.of({ target: body.target, attachedBeadId: body.attached_bead_id });
    const { root, members } = await launchFormula(
      this.city.formulas,
      this.city.molecules,
      name,
      body.vars ?? {},
      { source: 'cook', routedTo: body.target, title: body.title, attachedBeadId: body.attached_bead_id },
      run,
    );
    this.setStatus(201);
    this.setHeader('Location', `/v0/city/${encodeURIComponent(this.city.name)}/runs/${root.id}`);
    return {
      root_bead_id: root.id,
      workflow_id: root.id,
      run: { kind: 'cook', run_id: root.id, status: this.city.runs.status(root) },
      created: members.size + 1,
      beads: Object.fromEntries([...members].map(([step, bead]) => [step, bead.id])),
    };
  }

  private detail(name: string, _target?: string): FormulaDetailResponse {
    const entry = formulaOrProblem(this.city.formulas, name);
    if (!entry.def) throw formulaErrors(name, entry.errors);
    const { compiled, errors } = compileFormula(entry.def, {}, 'validate');
    if (!compiled) throw formulaErrors(name, errors);
    return formulaDetail(entry, compiled);
  }
}

function checkName(name: string): void {
  if (!FORMULA_NAME.test(name)) {
    throw new Problem('validation-failed', `invalid: formula name ${JSON.stringify(name)}`, {
      errors: [{ location: 'path.name', message: 'a formula name is letters, digits, _, - and .', value: name }],
    });
  }
}

/** The body as text: a raw-text body is a string; anything else was not a document. */
function textOf(body: unknown): string {
  if (typeof body !== 'string') {
    throw new Problem(
      'unsupported-media-type',
      'unsupported_media_type: send the TOML text as application/octet-stream or text/plain',
    );
  }
  return body;
}
