import {
  Body,
  Controller,
  Delete,
  Get,
  Header,
  Path,
  Post,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import { IdempotentReplies } from './idempotent-replies.js';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  PackAddInputBody,
  PackAddResponseBody,
  PackListBody,
  PackRemovedOutputBody,
} from '../../shared/dto/packs.js';
import type { CityRuntime } from '../city-runtime.js';
import { PackEditor } from '../config/pack-editor.js';

const packReplies = new IdempotentReplies<PackAddResponseBody>();

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Packs')
export class PacksRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's direct imports (`[imports.<name>]` of city.toml or pack.toml): what can be added and removed.
   * Each with its source, the commit packs.lock pins (git-backed), the agents it brings, and why it is left out
   * when it is.
   * @summary List packs
   */
  @Get('packs')
  public listPacks(@Path('cityName') _cityName: string): PackListBody {
    return { packs: new PackEditor(this.city).list() };
  }

  /**
   * Imports a pack: a directory (used in place) or a git repository (`https://`, `file://`, `ssh://`,
   * `user@host:path`, with an optional `//subdir`; `version` a branch, tag, `sha:<commit>` or semver range).
   * A git source is checked against the machine's `[packs]` policy in supervisor.toml (private address ranges
   * and, when disabled, `file://` are refused), fetched with the machine's git into `$CTL_HOME/cache/packs`
   * with the git packs it imports, and its resolved commit recorded in packs.lock; then `[imports.<name>]` is
   * written to city.toml and its agents (`<name>.<agent>`), formulas and orders join the city at once. The same
   * import again answers 200. Nothing is recorded when any step fails. With an `Idempotency-Key`, a repeat answers
   * as the first did (a different body under the key: 422).
   * @summary Add a pack
   * @param idempotencyKey Makes a retried add safe.
   */
  @Post('packs')
  @SuccessResponse(201, 'Created')
  @Response<PackAddResponseBody>(200, 'Already imported from that source and version')
  @Response<ErrorModel>(409, 'The name is taken by another import, or the repository needs credentials')
  @Response<ErrorModel>(422, 'A bad source or name, a refused source, or content that is not a valid pack')
  @Response<ErrorModel>(502, 'git could not fetch the source (`pack-fetch-failed`)')
  public async addPack(
    @Path('cityName') _cityName: string,
    @Body() body: PackAddInputBody,
    @Header('idempotency-key') idempotencyKey?: string,
  ): Promise<PackAddResponseBody> {
    const { status, reply } = await packReplies.run(idempotencyKey, body, async () => {
      const { created, pack } = await new PackEditor(this.city).add(body);
      return { status: created ? 201 : 200, reply: pack };
    });
    this.setStatus(status);
    return reply;
  }

  /**
   * Removes an import: its `[imports.<name>]` table (from the file that declares it) and its packs.lock entries.
   * Its agents' sessions are stopped by the tick like those of any agent removed. The cache keeps its content.
   * @summary Remove a pack
   * @param name The binding.
   */
  @Delete('packs/{name}')
  @Response<ErrorModel>(404, 'No such import (`pack-not-found`)')
  public removePack(@Path('cityName') _cityName: string, @Path() name: string): PackRemovedOutputBody {
    new PackEditor(this.city).remove(name);
    return { name };
  }
}
