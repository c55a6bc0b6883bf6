// Type-level checks that the Client's hand-written wire types read what the
// schemas (schemas/, generated into ./generated/) say crosses the wire. The
// readers in wire.ts and protocol/frames.ts rebuild each value from checked
// fields; these checks make a schema change those types do not follow a
// type error, so `npm run typecheck` (and `make test`) fails on it.

/**
 * T as the Client holds it: the schemas let a list be null (Go writes a nil
 * slice so) and the readers take null as empty.
 */
export type Normalized<T> = T extends null
  ? never
  : T extends readonly (infer U)[]
    ? Normalized<U>[]
    : T extends object
      ? { [K in keyof T]: Normalized<T[K]> }
      : T;

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/**
 * true when H, a type the Client reads a value into, is the schema's type G:
 * every field of H is a field of G (nothing renamed), with a type that takes
 * every value G allows (nothing retyped), required in H only where G
 * requires it (nothing assumed present that may be absent), and every
 * field G requires is in H. G may have optional fields H leaves out.
 */
export type Reads<H, G> = ReadsAs<H, Normalized<G>, true>;

/** Reads without the last rule: H is a view of some of G's fields. */
export type ReadsSome<H, G> = ReadsAs<H, Normalized<G>, false>;

type ReadsAs<H, G, Whole extends boolean> = [H] extends [readonly (infer HU)[]]
  ? [G] extends [readonly (infer GU)[]]
    ? ReadsAs<HU, GU, Whole>
    : false
  : [H] extends [object]
    ? [G] extends [object]
      ? ObjectReads<H, G, Whole>
      : false
    : [G] extends [H]
      ? true
      : false;

type ObjectReads<H, G, Whole extends boolean> = [Exclude<keyof H, keyof G>] extends [never]
  ? [Exclude<RequiredKeys<H>, RequiredKeys<G>>] extends [never]
    ? [Whole extends true ? Exclude<RequiredKeys<G>, keyof H> : never] extends [never]
      ? false extends { [K in keyof H & keyof G]-?: ReadsAs<Exclude<H[K], undefined>, Exclude<G[K], undefined>, Whole> }[keyof H & keyof G]
        ? false
        : true
      : false
    : false
  : false;

/** Fails to compile unless T is true. */
export type Assert<T extends true> = T;

/**
 * An unchecked value read by the field names of the schema's type T: a
 * reader of it names only fields the schema has, and checks each value.
 */
export type Fields<T> = { readonly [K in keyof T]?: unknown };
