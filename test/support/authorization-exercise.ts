import type { CallerKind, Target } from './authorization-matrix';
import { type Member, MEMBER_ORGANIZATION, MEMBER_OWNER, type Person, type World } from './authorization-world';
import { harness } from './harness';

/**
 * How the matrix exercises each route: what it prepares (the targets a request can name, and who
 * the `customer` caller is for the route), the request a cell sends, the rows a call could touch
 * (a denied one must leave them as they were), and what an allowed call must have done or shown.
 * The statuses themselves come from RULES (authorization-matrix.ts), never from here.
 */

/** A target with the ids a request names and the target's data no denied answer may contain. */
export interface Instance extends Target {
  ids: Record<string, string>;
  secrets: string[];
}
export interface Fixture {
  /** Who the `customer` caller is on this route (the world's customer unless the route needs its own). */
  subject?: Person;
  /** What requests can name; none: the route names nothing (the caller acts on its own). */
  targets: Instance[];
  /** Data of the subject no other caller's answer may contain (routes that name nothing). */
  secrets?: string[];
  /** Values every request of the route carries (the subject's code...). */
  values?: Record<string, string>;
  /** Another instance like `target` for an allowed cell that would use it up (and is not its owner's). */
  fresh?: (target: Instance, kind: CallerKind) => Promise<Instance>;
  /** Undoes what the fixture holds once the route is done (a held provider job...). */
  cleanup?: () => Promise<void>;
}
export interface Cell {
  kind: CallerKind;
  /** The person behind a user caller. */
  person?: Person;
  target?: Instance;
}
/** A cell's request: the template's path parameters by name, and the rest. */
export interface Request {
  params?: Record<string, string>;
  query?: Record<string, string>;
  json?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
}
export interface Reply {
  status: number;
  text: string;
  // Answers are read as the JSON they are.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}
/** Rows of one table (only `columns` compared, where given: others change in the background). */
export interface Rows {
  table: string;
  where: Record<string, string | string[]>;
  columns?: string[];
}
export interface Context {
  world: World;
  fixture: Fixture;
}
export interface Exercise {
  prepare?(world: World): Promise<Fixture>;
  request?(cell: Cell, context: Context): Request;
  /** State-changing routes: the rows a call could touch, for the target and the callers' own (`people`). */
  rows?(target: Instance | undefined, people: string[], context: Context): Rows[];
  /** What an allowed call must have done (a problem, or nothing). */
  done?(cell: Cell, reply: Reply, context: Context, since: Date): Promise<string | undefined>;
  /** What an allowed read must show, and nothing it may not (a problem starting `leak:` is a leak). */
  shows?(cell: Cell, reply: Reply, context: Context): string | undefined;
}

// ---------------------------------------------------------------------------------------------
// Helpers the areas share

export const db = () => harness().db;
/** Whose the target is, as the `customer` caller sees it. */
const LABEL: Record<Member, string> = {
  customer: "the customer's own",
  peer: "another customer's (same organization)",
  foreign: "another organization's customer's",
};
const MEMBERS: Member[] = ['customer', 'peer', 'foreign'];
export const personSecrets = (p: Person) => [p.id, p.email, p.phone];

/** One instance per household member: its own, its organization's, another organization's. */
export function perMember<T extends { person: Person }>(
  house: Record<Member, T>,
  ids: (m: T) => Record<string, string>,
  secrets: (m: T) => string[] = () => [],
): Instance[] {
  return MEMBERS.map((member) => ({
    label: LABEL[member],
    organization: MEMBER_ORGANIZATION[member],
    owner: MEMBER_OWNER[member],
    ids: ids(house[member]),
    secrets: [...personSecrets(house[member].person), ...secrets(house[member])],
  }));
}
export const first = async <T>(query: Promise<T[]>): Promise<T | undefined> => (await query)[0];
export const row = (table: string, where: Record<string, unknown>) =>
  first(db()(table).where(where).limit(1) as unknown as Promise<Record<string, unknown>[]>);
export const problem = (ok: boolean, what: string) => (ok ? undefined : what);

/** A digest of each set of rows (count, and an md5 of the compared columns): equal digests, unchanged rows. */
export async function snapshot(specs: Rows[]): Promise<string[]> {
  return Promise.all(
    specs.map(async ({ table, where, columns }) => {
      const query = db()(`${table} as t`);
      for (const [column, value] of Object.entries(where))
        if (Array.isArray(value)) query.whereIn(`t.${column}`, value);
        else query.where(`t.${column}`, value);
      const picked = columns ? `json_build_array(${columns.map((c) => `t.${c}`).join(', ')})::text` : 't::text';
      const [digest] = await query.select(
        db().raw(`count(*)::int as n, md5(coalesce(string_agg(${picked}, '|' order by ${picked}), '')) as h`),
      );
      return `${digest.n} rows, ${digest.h}`;
    }),
  );
}
export const describeRows = (spec: Rows) =>
  `${spec.table} where ${Object.entries(spec.where)
    .map(([k, v]) => `${k} ${Array.isArray(v) ? `in (${v.length})` : `= ${v}`}`)
    .join(' and ')}`;
