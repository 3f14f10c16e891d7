import { Body, Controller, Get, Path, Post, Request, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { Request as KoaRequest } from 'koa';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  WebhookDeliveryResponse,
  WebhookListBody,
  WebhookPayload,
  WebhookPong,
} from '../../shared/dto/webhooks.js';
import { WEBHOOK_PEER_HEADER } from '../../shared/http/webhook-path.js';
import type { CityRuntime } from '../city-runtime.js';
import { webhookView } from '../webhooks/webhook-views.js';

/**
 * @param cityName City name.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Webhooks')
export class WebhooksRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The `[[webhook]]` tables of `city.toml` the city takes deliveries for, in the order written: where, how they are
   * verified (secrets named by their variables, never shown), the rate they are held to, and their rules. A table
   * with a mistake is not here: `GET /config/validate` names it. Webhook orders are in `GET /orders`.
   * @summary List webhooks
   */
  @Get('webhooks')
  public listWebhooks(@Path('cityName') _cityName: string): WebhookListBody {
    const { webhooks, policy } = this.city.composed.webhooks;
    return { webhooks: webhooks.map((w) => webhookView(this.city.name, w, policy)) };
  }

  /**
   * A webhook delivery, to a `[[webhook]]` of `city.toml` by its name, else to a `trigger = "webhook"` order by its
   * scoped name. Senders deliver on the webhook listener (`POST /hooks/{city}/{name}`, `[webhooks] listen` of
   * supervisor.toml), which passes each delivery here with the connection's address; on the control plane this
   * is a mutation like any — a caller the access rule admits, `X-CTL-Request` — for replaying a delivery by hand
   * (its address unknown: a webhook with `allowed_cidrs` refuses it). The body (any type, up to 1 MiB) is checked
   * as bytes; its signature is checked either way.
   *
   * A `[[webhook]]`: the sender's address against `allowed_cidrs` (403), `bearer_env`'s token (401), its scheme —
   * `github-hmac-sha256`, `hmac-sha256`, `slack-v0`, `discord-ed25519`, `jwt-jwks` (401; a secret unset or weak,
   * or keys that cannot be fetched: 503) — then the rate limit, which only authentic deliveries draw from (429
   * with `Retry-After`). A Discord PING is answered
   * `{"type": 1}`. The body must be a JSON object (400); the first `[[webhook.rule]]` matching its event and payload
   * fires its order with the rule's args as vars; none matching is a 200 `{status: "ok", matched: false}`.
   *
   * A webhook order: the body's HMAC-SHA256 under the secret in its `secret_env`, in `signature_header` (default
   * `X-Hub-Signature-256`: `sha256=<hex>`, as GitHub signs; bare hex or base64 too); a JSON object's top-level
   * scalars are its vars.
   *
   * Either fires its order (202, `webhook.received`): the body in a file (`CTL_WEBHOOK_PAYLOAD_FILE`, formula var
   * `webhook_payload_file`). A redelivery of a delivery accepted in the last 72 hours — the same delivery id
   * (`X-GitHub-Delivery`, `X-CTL-Delivery`, a JWT's `jti`, `dedup_header`) or the same body — fires nothing: a 200
   * `{status: "duplicate", deduped: true}` naming the first firing's tracking bead, recorded as `webhook.received`
   * with `deduped: true`. A refusal records `webhook.rejected` with its reason.
   * @summary Deliver a webhook
   * @param name A `[[webhook]]`'s name, or a webhook order's scoped name (`name`, or `name:rig:<rig>`).
   */
  @Post('hook/{name}')
  @SuccessResponse(202, 'Dispatched: the order fired')
  @Response<WebhookDeliveryResponse | WebhookPong>(
    200,
    'A duplicate (nothing fired), an authentic delivery no rule matched, or a Discord PING answered',
  )
  @Response<ErrorModel>(400, 'A `[[webhook]]` delivery whose body is not a JSON object (`webhook-rejected`)')
  @Response<ErrorModel>(401, 'The signature or bearer token is missing or does not match (`webhook-rejected`)')
  @Response<ErrorModel>(403, 'The sender’s address is not in the webhook’s `allowed_cidrs` (`webhook-rejected`)')
  @Response<ErrorModel>(404, 'City not running, or no webhook and no webhook order of that name (`order-not-found`)')
  @Response<ErrorModel>(409, 'The order is disabled, or an earlier firing is still open')
  @Response<ErrorModel>(
    422,
    'A webhook order’s JSON body that does not parse, a required param missing, or a rule’s order that is no webhook order',
  )
  @Response<ErrorModel>(429, 'Past the webhook’s rate limit (`Retry-After` says when to try again)')
  @Response<ErrorModel>(503, 'The secret is unset or too weak, or the JWKS cannot be had (closed until it is)')
  public async deliverWebhook(
    @Path() cityName: string,
    @Path() name: string,
    @Request() req: KoaRequest,
    @Body() _payload?: WebhookPayload,
  ): Promise<WebhookDeliveryResponse | WebhookPong> {
    const peer = req.headers[WEBHOOK_PEER_HEADER];
    const reply = await this.city.webhooks.deliver({
      name,
      headers: req.headers,
      body: req.rawBody ?? Buffer.alloc(0),
      ...(typeof peer === 'string' ? { peer } : {}),
    });
    this.setStatus(reply.status);
    if (reply.status === 202 && 'tracking_id' in reply.body && reply.body.tracking_id) {
      this.setHeader(
        'Location',
        `/v0/city/${encodeURIComponent(this.city.name)}/order/history/${reply.body.tracking_id}`,
      );
    }
    return reply.body;
  }
}
