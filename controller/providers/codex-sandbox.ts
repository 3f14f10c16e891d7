/**
 * Codex's sandboxes as permission modes: configuration overrides, which `codex exec`, `exec resume` and the
 * codex-acp adapter all take (`exec resume` has no --sandbox flag).
 */
export const CODEX_SANDBOX_MODES: Record<string, string[]> = {
  default: [],
  'read-only': ['-c', 'sandbox_mode="read-only"'],
  'workspace-write': ['-c', 'sandbox_mode="workspace-write"'],
  'danger-full-access': ['-c', 'sandbox_mode="danger-full-access"'],
};
