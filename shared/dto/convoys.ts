import type { Bead } from './beads.js';

/** Body of `POST /v0/city/{cityName}/convoys`. */
export interface ConvoyCreateInputBody {
  /** @minLength 1 */
  title: string;
  /** Bead ids the convoy tracks; null: none. */
  items?: string[] | null;
  rig?: string;
}

/** Body of `POST /v0/city/{cityName}/convoy/{id}/add` and `…/remove`. */
export interface ConvoyItemsInputBody {
  /** Bead ids; absent or null: none (nothing changes). */
  items?: string[] | null;
}

export interface ConvoyProgress {
  /** @isInt */
  total: number;
  /** @isInt */
  closed: number;
}

/** Body of `GET /v0/city/{cityName}/convoy/{id}`. */
export interface ConvoyGetResponse {
  convoy: Bead;
  /** The tracked beads. */
  children: Bead[];
  progress: ConvoyProgress;
}

/** Body of `GET /v0/city/{cityName}/convoy/{id}/check`. */
export interface ConvoyCheckResponse {
  convoy_id: string;
  /** @isInt */
  total: number;
  /** @isInt */
  closed: number;
  /** Every tracked bead is closed (and there is at least one). */
  complete: boolean;
}
