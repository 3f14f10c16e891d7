import { expect } from 'chai';
import { bearerMatches, parseCidrs, sourceAllowed } from '../../controller/webhooks/access.js';
import { matchRule, renderTemplate } from '../../controller/webhooks/match.js';
import { RateLimiter } from '../../controller/webhooks/rate.js';
import { effectiveRateLimit, parseWebhooks, type WebhookRule } from '../../controller/webhooks/webhook-config.js';
import { auditKeys } from '../../controller/config-schema/key-audit.js';
import { CITY_TOML } from '../../controller/config-schema/reference-keys.js';
import { parse } from 'smol-toml';
import { carriesApiToken } from '../../supervisor/api-tokens.js';

const rule = (r: Partial<WebhookRule>): WebhookRule => ({ event: '*', match: {}, order: 'o', args: {}, ...r });

describe('webhook rules, access and rate (unit)', () => {
  const body = {
    action: 'opened',
    number: 1347,
    pull_request: { state: 'open', head: { ref: 'feature/x' }, labels: [{ name: 'deploy' }], draft: false },
  };

  it('the first rule whose event and every match path hold wins; a missing path never matches', () => {
    const rules = [
      rule({ event: 'issues', order: 'triage' }),
      rule({ event: 'pull_request', match: { action: 'closed' }, order: 'cleanup' }),
      rule({
        event: 'pull_request',
        match: { 'pull_request.head.ref': 'feature/*', 'pull_request.labels.0.name': 'deploy' },
        order: 'review',
      }),
      rule({ event: '*', order: 'catch-all' }),
    ];
    expect(matchRule(rules, { eventType: 'pull_request', body })?.rule.order).to.equal('review');
    expect(matchRule(rules, { eventType: 'pull_request', body })?.index).to.equal(2);
    expect(matchRule(rules, { eventType: 'push', body })?.rule.order).to.equal('catch-all');
    expect(matchRule(rules.slice(0, 3), { eventType: 'pull_request', body: { action: 'opened' } })).to.equal(undefined);
    expect(matchRule([rule({ match: { 'pull_request.draft': 'false', number: '*' } })], { body })?.index).to.equal(0);
    expect(matchRule([rule({ match: { missing: '*' } })], { body })).to.equal(undefined);
  });

  it('renders args from payload paths and @ tokens, as text only', () => {
    const input = { eventType: 'pull_request', deliveryId: 'd-7', identity: 'bot', body: { ...body, evil: '$(id)' } };
    expect(
      renderTemplate('PR #{{ number }} on {{pull_request.head.ref}} ({{@event}}/{{@delivery}}/{{@identity}})', input),
    ).to.equal('PR #1347 on feature/x (pull_request/d-7/bot)');
    expect(renderTemplate('{{nope}}|{{pull_request.labels}}|{{evil}}|{{ unclosed', input)).to.equal(
      '|[{"name":"deploy"}]|$(id)|{{ unclosed',
    );
    expect(
      matchRule([rule({ args: { pr: '{{number}}', ref: '{{pull_request.head.ref}}' } })], input)?.vars,
    ).to.deep.equal({
      pr: '1347',
      ref: 'feature/x',
    });
  });

  it('allowed_cidrs: CIDRs and addresses, IPv4-mapped IPv6 read as IPv4; junk named', () => {
    const list = parseCidrs(['192.30.252.0/22', '2a0a:a440::/29', '203.0.113.7', '::ffff:198.51.100.0/120']);
    expect(sourceAllowed(list, '192.30.253.9')).to.equal(true);
    expect(sourceAllowed(list, '::ffff:192.30.253.9')).to.equal(true);
    expect(sourceAllowed(list, '2a0a:a440::1')).to.equal(true);
    expect(sourceAllowed(list, '203.0.113.7')).to.equal(true);
    expect(sourceAllowed(list, '198.51.100.200')).to.equal(true);
    expect(sourceAllowed(list, '203.0.113.8')).to.equal(false);
    expect(sourceAllowed(list, '127.0.0.1')).to.equal(false);
    expect(sourceAllowed(list, undefined)).to.equal(false);
    expect(() => parseCidrs(['10.0.0.0/33'])).to.throw('"10.0.0.0/33" has no valid prefix length');
    expect(() => parseCidrs(['github'])).to.throw('"github" is not a CIDR or an IP address');
  });

  it('a bearer token matches only as "Bearer <token>"', () => {
    expect(bearerMatches('Bearer t0ken', 't0ken')).to.equal(true);
    expect(bearerMatches('bearer  t0ken ', 't0ken')).to.equal(true);
    expect(bearerMatches('Bearer other', 't0ken')).to.equal(false);
    expect(bearerMatches('t0ken', 't0ken')).to.equal(false);
    expect(bearerMatches(undefined, 't0ken')).to.equal(false);
  });

  it('the supervisor passes a sender’s Authorization on, never one carrying something shaped as our API token', () => {
    const ours = `ctl_${'a'.repeat(43)}`;
    expect(carriesApiToken(`Bearer ${ours}`)).to.equal(true);
    expect(carriesApiToken(`token ${ours}, Bearer x`)).to.equal(true);
    expect(carriesApiToken('Bearer token-of-the-sender')).to.equal(false);
    expect(carriesApiToken('Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln')).to.equal(false);
    expect(carriesApiToken(`Bearer x${ours}`)).to.equal(false);
  });

  it('the rate limit: a burst, then one token per 60/perMinute seconds, with when to retry', () => {
    let now = 0;
    const limiter = new RateLimiter(() => now);
    const limit = { perMinute: 6, burst: 2 };
    expect(limiter.take('a', limit).allowed).to.equal(true);
    expect(limiter.take('a', limit).allowed).to.equal(true);
    expect(limiter.take('a', limit)).to.deep.equal({ allowed: false, retryAfterSeconds: 10 });
    expect(limiter.take('b', limit).allowed, 'another webhook has its own bucket').to.equal(true);
    now = 10_000;
    expect(limiter.take('a', limit).allowed).to.equal(true);
    expect(limiter.take('a', limit).allowed).to.equal(false);
  });

  it('max_per_minute only lowers the city’s limit, and the burst never passes it', () => {
    const { policy, webhooks, problems } = parseWebhooks(
      parse(`
[webhooks.rate_limit]
per_minute = 100
burst = 20
[[webhooks.rate_limit.override]]
name = "loud"
per_minute = 1000
[[webhook]]
name = "quiet"
max_per_minute = 1
verify = { scheme = "github-hmac-sha256", secret_env = "S" }
[[webhook.rule]]
event = "*"
order = "o"
[[webhook]]
name = "loud"
max_per_minute = 5000
verify = { scheme = "github-hmac-sha256", secret_env = "S" }
[[webhook.rule]]
event = "*"
order = "o"
`),
    );
    expect(problems).to.deep.equal([]);
    expect(effectiveRateLimit(policy, webhooks[0])).to.deep.equal({ perMinute: 1, burst: 1 });
    expect(effectiveRateLimit(policy, webhooks[1])).to.deep.equal({ perMinute: 1000, burst: 20 });
  });

  it('parses [[webhook]] tables, naming the key of each mistake and keeping the good ones', () => {
    const { webhooks, problems } = parseWebhooks(
      parse(`
[[webhook]]
name = "gh"
verify = { scheme = "github-hmac-sha256", secret_env = "GH_SECRET", allowed_cidrs = ["192.30.252.0/22"] }
[[webhook.rule]]
event = "pull_request"
order = "review"
match.action = "opened"
match.pull_request.state = "open"
args = { pr = "{{number}}" }
[[webhook]]
name = "bad scheme"
verify = { scheme = "md5" }
[[webhook]]
name = "nosecret"
verify = { scheme = "slack-v0" }
[[webhook.rule]]
event = "*"
order = "o"
[[webhook]]
name = "cidr"
verify = { scheme = "hmac-sha256", secret_env = "S", signature_header = "X-Sig", allowed_cidrs = ["10.0.0.0/40"] }
[[webhook]]
name = "norules"
verify = { scheme = "github-hmac-sha256", secret_env = "S" }
[[webhook]]
name = "jwt"
verify = { scheme = "jwt-jwks" }
[[webhook.rule]]
event = "*"
order = "o"
target = "conversation"
[[webhook]]
name = "gh"
verify = { scheme = "github-hmac-sha256", secret_env = "S" }
[[webhook.rule]]
event = "*"
order = "o"
`),
    );
    expect(webhooks.map((w) => w.name)).to.deep.equal(['gh']);
    expect(webhooks[0].rules[0]).to.deep.equal({
      event: 'pull_request',
      order: 'review',
      match: { action: 'opened', 'pull_request.state': 'open' },
      args: { pr: '{{number}}' },
    });
    expect(problems.map((p) => p.key)).to.deep.equal([
      'webhook[1].name',
      'webhook[2].verify.secret_env',
      'webhook[3].verify.allowed_cidrs',
      'webhook[4].rule',
      'webhook[5].rule[0].target',
      'webhook[6].name',
    ]);
    expect(problems[2].message).to.equal('webhook[3].verify.allowed_cidrs: "10.0.0.0/40" has no valid prefix length');
    expect(problems[1].message).to.contain('scheme slack-v0 needs secret_env');
  });

  it('validate knows [[webhook]] keys, and warns of the reference’s it does not act on, with why', () => {
    const doc = parse(`
[webhooks]
allow_public = []
[[webhook]]
name = "gh"
publication = { visibility = "public" }
verify = { scheme = "github-hmac-sha256", secret_env = "S", secret_key = "slot", bogus = 1 }
[[webhook.rule]]
event = "*"
order = "o"
`);
    const findings = auditKeys(doc, CITY_TOML, 'city.toml').map((f) => [f.kind, f.key]);
    expect(findings).to.deep.equal([
      ['unsupported', 'webhooks.allow_public'],
      ['unsupported', 'webhook[0].publication'],
      ['unsupported', 'webhook[0].verify.secret_key'],
      ['unknown', 'webhook[0].verify.bogus'],
    ]);
  });
});
