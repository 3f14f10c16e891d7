import { createElement } from 'react';
import { render } from 'ink';
import type { CityInfo } from '../../shared/dto/cities.js';
import type { Api } from '../_types.js';
import { TopModel } from './model.js';
import { TopScreen } from './view.js';

/**
 * Runs `ctl top` until q or Ctrl-C: reads everything once (a supervisor that does not answer is the usual one-line
 * error, before the screen is taken), then draws on the terminal's alternate screen, which Ink leaves as it found
 * it — cursor shown, raw mode off — however the screen ends.
 */
export async function runTop(api: Api, city: CityInfo | undefined): Promise<void> {
  const model = new TopModel(api, city);
  await model.start();
  // Interactive whatever CI says: Ink takes a CI variable in the environment (a build host's shell often has one)
  // for a log, and would draw nothing until the screen closes; `ctl top` only runs on a terminal anyway.
  const app = render(createElement(TopScreen, { model }), {
    alternateScreen: true,
    interactive: true,
    patchConsole: true,
    maxFps: 20,
  });
  try {
    await app.waitUntilExit();
  } finally {
    model.close();
  }
}
