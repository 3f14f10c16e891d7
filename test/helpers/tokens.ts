import { createHash, randomBytes } from 'node:crypto';

/** A `tokens.json` holding one token, and its secret: for a supervisor that must have tokens before it starts. */
export function seededToken(name = 'seeded', options: { readOnly?: boolean } = {}): { file: string; secret: string } {
  const secret = `ctl_${randomBytes(32).toString('base64url')}`;
  const token = {
    name,
    sha256: createHash('sha256').update(secret).digest('hex'),
    read_only: options.readOnly === true,
    created_at: new Date().toISOString(),
    created_by: 'test',
  };
  return { file: JSON.stringify({ tokens: [token] }) + '\n', secret };
}
