// Paths and schemas the generated document needs that tsoa cannot derive from route classes.

export const extraPaths: Record<string, Record<string, unknown>> = {};

export const extraSchemas: Record<string, Record<string, unknown>> = {};
