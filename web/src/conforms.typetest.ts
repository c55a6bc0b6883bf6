// The checks of conforms.ts catch what they are for: each @ts-expect-error
// below must be an error, so `npm run typecheck` fails if a check stops
// failing on the drift it names.

import type { Assert, Reads, ReadsSome } from "./conforms";

interface Schema {
  id: string;
  list: string[] | null;
  count?: number;
  nested: { label: string; note?: string };
}

// The same shape, nulls read as empty, an optional field left out.
export type Same = Assert<Reads<{ id: string; list: string[]; nested: { label: string } }, Schema>>;
// A field renamed.
// @ts-expect-error the schema has no field "ident"
export type Renamed = Assert<Reads<{ ident: string; list: string[]; nested: { label: string } }, Schema>>;
// A field retyped.
// @ts-expect-error the schema's id is a string
export type Retyped = Assert<Reads<{ id: number; list: string[]; nested: { label: string } }, Schema>>;
// A field assumed present that the schema makes optional.
// @ts-expect-error the schema's count may be absent
export type AssumedPresent = Assert<Reads<{ id: string; list: string[]; count: number; nested: { label: string } }, Schema>>;
// A required field left out.
// @ts-expect-error the schema requires nested
export type Missing = Assert<Reads<{ id: string; list: string[] }, Schema>>;
// ...which a partial view may do.
export type Partial = Assert<ReadsSome<{ id: string; list: string[] }, Schema>>;
// A nested field renamed.
// @ts-expect-error the schema's nested has no "title"
export type NestedRenamed = Assert<Reads<{ id: string; list: string[]; nested: { title: string } }, Schema>>;
// A reader narrower than the schema.
// @ts-expect-error the schema's id is any string
export type Narrower = Assert<Reads<{ id: "a"; list: string[]; nested: { label: string } }, Schema>>;
