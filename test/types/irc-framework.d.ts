// What the tests use of irc-framework (it ships no types).
declare module 'irc-framework' {
  import { EventEmitter } from 'node:events';

  class Client extends EventEmitter {
    connect(options: {
      host: string;
      port: number;
      nick: string;
      username?: string;
      gecos?: string;
      auto_reconnect?: boolean;
    }): void;
    join(channel: string): void;
    say(target: string, message: string): void;
    quit(message?: string): void;
    user: { nick: string };
  }

  const IRC: { Client: typeof Client };
  export default IRC;
  export type { Client };
}
