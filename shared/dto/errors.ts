/** One failing input of a request, for body, query and path validation errors. */
export interface ErrorDetail {
  /** Where the error occurred, e.g. `body.dir` or `query.limit`. */
  location?: string;
  /** What is wrong with it. */
  message?: string;
  /** The offending value, when there was one. */
  value?: unknown;
}

/** RFC 9457 problem details, the body of every error response (`application/problem+json`). */
export interface ErrorModel {
  /** `urn:ctl:error:<code>`. */
  type?: string;
  /** Short summary of the problem type; stable per type. */
  title?: string;
  /**
   * HTTP status code.
   * @isInt
   */
  status?: number;
  /** Occurrence text, starting with a short code and a colon (`not_found: …`, `conflict: …`, `csrf: …`). */
  detail?: string;
  /** The request path this problem is about. */
  instance?: string;
  /** Failing fields, for validation errors. */
  errors?: ErrorDetail[];
  /** Stable machine-readable error code (the last segment of `type`), kebab-case. */
  code?: string;
}
