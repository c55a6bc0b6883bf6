// Generates the TypeScript types of the Session events from the JSON Schema
// files one folder up, with json-schema-to-typescript, and writes them for
// each TypeScript package that reads the wire: the web Client
// (web/src/generated/events.ts) and the agent SDK
// (sdk/typescript/src/generated/events.ts). With --check it writes nothing
// and fails when a file is not what the schemas generate, so a schema
// change that was not regenerated fails `make test`.
//
// One root schema names every body (EventBodies: event type → body, read
// from event.json's dispatch) and the envelope, so every shared shape is
// declared once.
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const schemas = join(here, "..");
const repo = join(here, "..", "..");
const targets = ["web/src/generated/events.ts", "sdk/typescript/src/generated/events.ts"];

const envelope = JSON.parse(await readFile(join(schemas, "event.json"), "utf8"));
const properties = {};
for (const branch of envelope.allOf) {
  properties[branch.if.properties.type.const] = { $ref: branch.then.properties.data.$ref };
}

// A schema that says only what a value means, with no type, $ref or
// other constraint, allows any JSON: it is typed unknown (the generator
// would otherwise read it as an object). The files themselves carry no
// generator keywords.
const constraining = ["type", "$ref", "enum", "const", "allOf", "anyOf", "oneOf", "not", "if", "properties", "items"];
function markAny(node) {
  if (Array.isArray(node)) return node.forEach(markAny);
  if (node === null || typeof node !== "object") return;
  for (const [key, child] of Object.entries(node)) {
    if (key === "properties" || key === "$defs") {
      for (const sub of Object.values(child)) {
        if (sub && typeof sub === "object" && !constraining.some((k) => k in sub)) sub.tsType = "unknown";
      }
    }
    markAny(child);
  }
}
const schemaFiles = {
  order: 1,
  canRead: /\.json$/i,
  async read(file) {
    const doc = JSON.parse(await readFile(fileURLToPath(new URL(file.url, "file://")), "utf8"));
    markAny(doc);
    return JSON.stringify(doc);
  },
};

const root = {
  title: "EventBodies",
  description: "The body of each Session event type Holdover reads, by type (schemas/event.json).",
  type: "object",
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
};

const banner = `// Generated from schemas/ by schemas/codegen (json-schema-to-typescript); do not edit.
// Run \`npm run generate\` in schemas/codegen after changing a schema.`;

const options = {
  cwd: schemas,
  additionalProperties: false,
  strictIndexSignatures: true,
  $refOptions: { resolve: { file: schemaFiles } },
};
markAny(envelope);
const bodies = await compile(root, "EventBodies", { ...options, bannerComment: banner });
const event = await compile(envelope, "Event", { ...options, bannerComment: "", declareExternallyReferenced: false });
const out = bodies + event;

const check = process.argv.includes("--check");
let stale = false;
for (const target of targets) {
  const file = join(repo, target);
  if (check) {
    const have = await readFile(file, "utf8").catch(() => "");
    if (have !== out) {
      console.error(`${target} is not what the schemas generate: run \`npm run generate\` in schemas/codegen`);
      stale = true;
    } else {
      console.log(`${target} matches the schemas`);
    }
  } else {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, out);
    console.log(`wrote ${target}`);
  }
}
if (stale) process.exit(1);
