import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseCityConfig } from '../../shared/config/city-config.js';
import { Problem } from '../../shared/http/problem.js';
import { composeConfig } from '../../controller/config/compose.js';
import { promptFor, type AgentDefinition } from '../../controller/agent-catalog/agent-catalog.js';
import {
  MAX_DEPTH,
  MAX_RENDERED_CHARS,
  MAX_RENDER_STEPS,
  recursiveDefines,
  renderPromptTemplate,
  TemplateLimitError,
} from '../../controller/agent-catalog/prompt-template.js';

/** `levels` defines, each calling the one below twice: level n renders 2^n times what level 0 does. */
function doublingBomb(levels: number, base = 'ha'): string {
  let text = `{{ define "l0" }}${base}{{ end }}`;
  for (let i = 1; i <= levels; i++)
    text += `{{ define "l${i}" }}{{ template "l${i - 1}" . }}{{ template "l${i - 1}" . }}{{ end }}`;
  return text;
}

const render = (body: string, library: string[] = []) =>
  renderPromptTemplate(body, { library, append: [], data: {}, functions: {} });

function refusal(run: () => unknown): TemplateLimitError {
  try {
    run();
  } catch (err) {
    if (err instanceof TemplateLimitError) return err;
    throw err;
  }
  throw new Error('it rendered');
}

// A prompt template is bounded in what it renders to and in the work it takes: it stops at the bound, never
// building the whole thing first; a define that calls itself is named before any session needs it.
describe('prompt template bounds', function () {
  it('refuses a 26-level doubling bomb at a bound, naming the template', function () {
    const err = refusal(() => render('{{ template "l26" . }}', [doublingBomb(26)]));
    expect(err.template).to.equal('l26');
    expect(err.message).to.match(
      new RegExp(
        `^template "l26" (renders more than ${MAX_RENDERED_CHARS} characters|takes more than ${MAX_RENDER_STEPS} steps)`,
      ),
    );
  });

  it('refuses a 23-level bomb of 64 characters (512 Mi) by its size, and one that renders nothing by its work', function () {
    expect(refusal(() => render('{{ template "l23" . }}', [doublingBomb(23, 'x'.repeat(64))])).message).to.include(
      `more than ${MAX_RENDERED_CHARS} characters`,
    );
    expect(refusal(() => render('{{ template "l26" . }}', [doublingBomb(26, '')])).message).to.include(
      `more than ${MAX_RENDER_STEPS} steps`,
    );
  });

  it('renders what stays inside the bounds, to the character', function () {
    // 2^10 × 1 Ki characters = 1 Mi: at the limit exactly, in fewer steps than the bound.
    const kibi = doublingBomb(10, 'x'.repeat(1024));
    expect(render('{{ template "l10" . }}', [kibi])).to.have.length(MAX_RENDERED_CHARS);
    expect(refusal(() => render('x{{ template "l10" . }}', [kibi])).message).to.include('characters');
  });

  it('refuses a define that calls itself at render, and names its circle beforehand', function () {
    const library =
      '{{ define "a" }}A{{ template "b" . }}{{ end }}{{ define "b" }}{{ if .X }}{{ template "a" . }}{{ end }}{{ end }}';
    expect(
      refusal(() =>
        renderPromptTemplate('{{ template "a" . }}', {
          library: [library],
          append: [],
          data: { X: '1' },
          functions: {},
        }),
      ).message,
    ).to.include(`more than ${MAX_DEPTH} deep`);
    expect(recursiveDefines([{ file: 'f.template.md', text: library }])).to.deep.equal([
      { file: 'f.template.md', circle: ['a', 'b', 'a'] },
    ]);
    expect(
      recursiveDefines([{ file: 'g', text: '{{ define "s" }}{{ template "s" . }}{{ end }}' }])[0]?.circle,
    ).to.deep.equal(['s', 's']);
    expect(recursiveDefines([{ file: 'h', text: doublingBomb(5) }])).to.deep.equal([]);
  });

  describe('in a city', function () {
    let root: string;
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    };
    beforeEach(function () {
      root = mkdtempSync(join(tmpdir(), 'ctl-bounds-'));
    });
    afterEach(function () {
      rmSync(root, { recursive: true, force: true });
    });
    const compose = (cityToml = '[workspace]\nname = "metro"\n') =>
      composeConfig(root, parseCityConfig(cityToml, 'city.toml'), { cacheRoot: join(root, 'cache') });
    const definition = (agent: ReturnType<typeof compose>['agents'][number]) =>
      ({ name: agent.name, config: agent, workDir: '/w' }) as unknown as AgentDefinition;

    it('a bomb among the fragments is a problem naming its file, template and limit; its sessions get a 422', function () {
      write('template-fragments/bomb.template.md', doublingBomb(26));
      write('agents/scribe/prompt.template.md', 'Hello\n{{ template "l26" . }}');
      const composed = compose();
      expect(composed.problems.map((p) => p.message)).to.deep.equal([
        `template-fragments/bomb.template.md: agent scribe's prompt template: template "l26" takes more than ${MAX_RENDER_STEPS} steps to render (the limit)`,
      ]);
      const scribe = composed.agents.find((a) => a.name === 'scribe')!;
      let refused: unknown;
      try {
        promptFor(definition(scribe), { city: 'metro', session: 's1' });
      } catch (err) {
        refused = err;
      }
      expect(refused).to.be.instanceOf(Problem);
      expect(refused).to.include({ status: 422, code: 'validation-failed' });
      expect((refused as Problem).detail).to.include('template "l26" takes more than');
    });

    it('a self-recursive define is a problem, and is never sent as its text', function () {
      write(
        'agents/scribe/prompt.template.md',
        '{{ define "me" }}again {{ template "me" . }}{{ end }}{{ template "me" . }}',
      );
      const composed = compose();
      expect(composed.problems.map((p) => p.message)).to.deep.equal([
        `agents/scribe/prompt.template.md: agent scribe's prompt template: template "me" calls itself ("me" → "me"), so it never ends`,
      ]);
      const scribe = composed.agents.find((a) => a.name === 'scribe')!;
      expect(() => promptFor(definition(scribe), { city: 'metro', session: 's1' })).to.throw(Problem, /calls itself/);
    });

    it('renders every field the reference’s prompts read: .CityName and the work queries', function () {
      write(
        'agents/scribe/prompt.template.md',
        '{{ .CityName }}|{{ .WorkQuery }}|{{ .AssignedInProgressQuery }}|{{ .AssignedReadyQuery }}|{{ .RoutedPoolQuery }}',
      );
      write('agents/queried/prompt.template.md', '{{ .WorkQuery }}|{{ .RoutedPoolQuery }}');
      write('agents/queried/agent.toml', 'work_query = "bd ready --json"\n');
      const composed = compose();
      expect(composed.problems).to.deep.equal([]);
      const agent = (name: string) => definition(composed.agents.find((a) => a.name === name)!);
      expect(promptFor(agent('scribe'), { city: 'metro', session: 's1' })).to.equal(
        'metro|ctl hook|ctl hook|ctl hook|ctl hook',
      );
      expect(promptFor(agent('queried'), { city: 'metro', session: 's1' })).to.equal('bd ready --json|bd ready --json');
    });
  });
});
