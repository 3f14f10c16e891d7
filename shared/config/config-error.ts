/** A configuration file that cannot be used; the message names the file and the key. */
export class ConfigError extends Error {}
