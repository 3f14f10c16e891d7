/** A message between agents (or people), stored as a `message` bead. */
export interface Message {
  id: string;
  from: string;
  to: string;
  subject: string;
  body: string;
  /** @format date-time */
  created_at: string;
  read: boolean;
  /** The conversation it belongs to; replies share their original's. */
  thread_id?: string;
  /** The message this one answers. */
  reply_to?: string;
  rig?: string;
  /** @isInt */
  priority?: number;
  cc?: string[];
}

/** Body of `POST /v0/city/{cityName}/mail`. */
export interface MailSendInputBody {
  /**
   * Recipient.
   * @minLength 1
   */
  to: string;
  /** @minLength 1 */
  subject: string;
  body?: string;
  /** Sender (default `human`). */
  from?: string;
  rig?: string;
}

/** Body of `POST /v0/city/{cityName}/mail/{id}/reply`. */
export interface MailReplyInputBody {
  body?: string;
  /** Sender (default: the original's recipient). */
  from?: string;
  /** Default `Re: <original subject>`. */
  subject?: string;
}

/** A page of messages. */
export interface MailListBody {
  items: Message[];
  /** @isInt */
  total: number;
  next_cursor?: string;
}

/** Body of `GET /v0/city/{cityName}/mail/count`. */
export interface MailCountOutputBody {
  /** @isInt */
  total: number;
  /** @isInt */
  unread: number;
}

/** The outcome of a mail state change (`read`, `unread`, `archived`, `deleted`). */
export interface MailStatusResponse {
  status: string;
}

/** Payload of `mail.*` events. */
export interface MailEventPayload {
  /** The rig the message belongs to (empty for the city's own mail). */
  rig: string;
  message?: Message;
}
