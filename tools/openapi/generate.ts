// `npm run gen`: from the tsoa route classes of both processes, one OpenAPI 3.1 document
// (shared/generated/openapi.json), one Koa routes file per process (supervisor/generated/routes.ts,
// controller/generated/routes.ts), and the typed client's types (shared/generated/api-types.ts).
// The TypeScript program is analysed once and the metadata shared by every output.

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { generateRoutes, generateSpec, type ExtendedRoutesConfig, type ExtendedSpecConfig } from '@tsoa/cli';
import { MetadataGenerator } from '@tsoa/cli/dist/metadataGeneration/metadataGenerator.js';
import type { Config } from '@tsoa/runtime';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { packageRoot } from '../../shared/paths.js';
import { extraPaths, extraSchemas } from './additions.js';
import { postprocess } from './postprocess.js';

const started = performance.now();
const root = packageRoot;
const config = JSON.parse(readFileSync(join(root, 'tsoa.json'), 'utf8')) as Config;
const tsconfig = ts.readConfigFile(join(root, 'tsconfig.json'), (p) => ts.sys.readFile(p));
const compilerOptions = ts.parseJsonConfigFileContent(tsconfig.config, ts.sys, root).options;
const globs = config.controllerPathGlobs ?? [];

const metadata = new MetadataGenerator(
  config.entryFile,
  compilerOptions,
  [],
  globs,
  undefined,
  undefined,
  true,
).Generate();

const generatedDir = join(root, 'shared', 'generated');
mkdirSync(generatedDir, { recursive: true });
const specConfig: ExtendedSpecConfig = {
  ...config.spec,
  entryFile: config.entryFile,
  noImplicitAdditionalProperties: config.noImplicitAdditionalProperties ?? 'throw-on-extras',
  controllerPathGlobs: globs,
};
await generateSpec(specConfig, compilerOptions, [], metadata);
const tsoaSpecPath = join(generatedDir, 'openapi.tsoa.json');
const raw = JSON.parse(readFileSync(tsoaSpecPath, 'utf8')) as Record<string, unknown>;
rmSync(tsoaSpecPath);
const document = postprocess(raw, { extraPaths, extraSchemas });
writeFileSync(join(generatedDir, 'openapi.json'), JSON.stringify(document, null, 2) + '\n');

// One routes file per process, each registering only its own classes, so neither process imports the other.
for (const processDir of ['supervisor', 'controller']) {
  const own = metadata.controllers.filter((c) => resolve(root, c.location).startsWith(join(root, processDir) + '/'));
  const routesConfig: ExtendedRoutesConfig = {
    ...config.routes,
    routesDir: join(processDir, 'generated'),
    iocModule: join(processDir, 'api', 'ioc'),
    entryFile: config.entryFile,
    noImplicitAdditionalProperties: config.noImplicitAdditionalProperties ?? 'throw-on-extras',
    // JSON bodies are taken as typed: "1" is not a number.
    bodyCoercion: false,
    controllerPathGlobs: globs,
  };
  await generateRoutes(routesConfig, compilerOptions, [], { ...metadata, controllers: own });
}

const ast = await openapiTS(document as unknown as Parameters<typeof openapiTS>[0], { alphabetize: true });
writeFileSync(
  join(generatedDir, 'api-types.ts'),
  `// Generated from openapi.json by npm run gen.\n${astToString(ast)}`,
);

console.log(`gen: openapi.json, 2 routes files, api-types.ts in ${((performance.now() - started) / 1000).toFixed(1)}s`);
