// Generates the TypeScript types of the wire from the JSON Schema files one
// folder up, with json-schema-to-typescript, for each TypeScript package
// that reads it: the web Client (web/src/generated/) and the agent SDK
// (sdk/typescript/src/generated/). Each gets events.ts (the Session events)
// and wire.ts (the shapes of the question service and the Session's other
// requests, records and inbox messages that package reads or sends). With
// --check it writes nothing and fails when a file is not what the schemas
// generate, so a schema change that was not regenerated fails `make test`;
// the hand-written code of both packages uses or asserts these types, so a
// change it does not follow fails their typecheck.
//
// Each file has one root schema naming every shape it exports (EventBodies:
// event type → body, read from event.json's dispatch; WireShapes: schema
// file → shape), so every shared shape is declared once. The web Client's
// wire.ts also has the frames of the WebSocket protocol: every file of
// websocket/client/ and websocket/gateway/ is in its WireShapes, and
// ClientFrames and GatewayFrames map each frame type (its type member's
// const) to its frame, so the union of either side's frames is
// `ClientFrames[keyof ClientFrames]` and a frame added to the folder joins
// it.
import { readFile, readdir, writeFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const schemas = join(here, "..");
const repo = join(here, "..", "..");

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

// The frames of one side of the WebSocket protocol: a root mapping each
// frame type to its schema file, in the folder websocket/<side>/.
async function frameMap(side, title, who) {
  const dir = join(schemas, "websocket", side);
  const files = (await readdir(dir)).filter((f) => f.endsWith(".json")).sort();
  const properties = {};
  for (const f of files) {
    const doc = JSON.parse(await readFile(join(dir, f), "utf8"));
    properties[doc.properties.type.const] = { $ref: `websocket/${side}/${f}` };
  }
  return {
    files: Object.values(properties).map((p) => p.$ref),
    root: {
      title,
      description: `Every frame ${who} sends on the WebSocket (docs/protocol.md), by type (schemas/websocket/${side}/).`,
      type: "object",
      properties,
      required: Object.keys(properties),
      additionalProperties: false,
    },
  };
}
const clientFrames = await frameMap("client", "ClientFrames", "a Client");
const gatewayFrames = await frameMap("gateway", "GatewayFrames", "the gateway");

// The wire shapes each package reads or sends, by schema file, and the
// frame maps it has.
const packages = [
  {
    dir: "web/src/generated",
    who: "the web Client",
    wireFiles: [
      "kv/user-questions.json",
      "waterfall/request.json",
      "frames/claim.json",
      "requests/answer.json",
      "replies/answer.json",
      "requests/discard.json",
      "replies/discard.json",
      ...clientFrames.files,
      ...gatewayFrames.files,
    ],
    frameMaps: [clientFrames.root, gatewayFrames.root],
  },
  {
    dir: "sdk/typescript/src/generated",
    who: "the agent SDK",
    wireFiles: [
      "requests/ask.json",
      "requests/ask-timed.json",
      "replies/ask.json",
      "replies/ask-timed.json",
      "replies/error.json",
      "frames/accepted.json",
      "requests/answer.json",
      "replies/answer.json",
      "requests/discard.json",
      "replies/discard.json",
      "requests/resume.json",
      "replies/resume.json",
      "kv/live-root.json",
      "inbox/reply-text.json",
      "tool/arguments.json",
      "tool/answers.json",
      "tool/pending.json",
    ],
  },
];
function wireRoot(pkg) {
  return {
    title: "WireShapes",
    description: `The shapes of the question service and the Session's other requests that ${pkg.who} reads or sends, by schema file (schemas/).`,
    type: "object",
    properties: Object.fromEntries(pkg.wireFiles.map((f) => [f, { $ref: f }])),
    required: pkg.wireFiles,
    additionalProperties: false,
  };
}

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
const events = bodies + event;

const check = process.argv.includes("--check");
let stale = false;
for (const pkg of packages) {
  let wire = await compile(wireRoot(pkg), "WireShapes", { ...options, bannerComment: banner });
  for (const root of pkg.frameMaps ?? []) {
    wire += await compile(root, root.title, { ...options, bannerComment: "", declareExternallyReferenced: false });
  }
  const outputs = { "events.ts": events, "wire.ts": wire };
  const dir = join(repo, pkg.dir);
  if (!check) await mkdir(dir, { recursive: true });
  for (const [name, out] of Object.entries(outputs)) {
    const target = `${pkg.dir}/${name}`;
    if (check) {
      const have = await readFile(join(dir, name), "utf8").catch(() => "");
      if (have !== out) {
        console.error(`${target} is not what the schemas generate: run \`npm run generate\` in schemas/codegen`);
        stale = true;
      }
    } else {
      await writeFile(join(dir, name), out);
      console.log(`wrote ${target}`);
    }
  }
}
if (stale) process.exit(1);
if (check) console.log("the generated TypeScript matches the schemas");
