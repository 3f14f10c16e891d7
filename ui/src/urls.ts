/** A city's dashboard page: `/ui/city/{name}` and what follows. */
export const cityUrl = (city: string, rest = '') => `/ui/city/${encodeURIComponent(city)}${rest}`;
