import type { IocContainer, Newable } from '@tsoa/runtime';
import type { CityRuntime } from '../city-runtime.js';

let runtime: CityRuntime | undefined;

export function provideRuntime(value: CityRuntime): void {
  runtime = value;
}

/** tsoa's container: a fresh route object per request (tsoa keeps response status and headers on it). */
export const iocContainer: IocContainer = {
  get<T>(controller: unknown): T {
    if (!runtime) throw new Error('city runtime is not ready');
    return new (controller as Newable<T, [CityRuntime]>)(runtime);
  },
};
