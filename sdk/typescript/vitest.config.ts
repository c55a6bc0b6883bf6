import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Every test runs against a real nats-server: the global setup builds the
// project's own binary and runs `holdover dev --no-demo` on ephemeral ports
// (the embedded server, the question worker, the gateway), then stops it.
export default defineConfig({
  // The examples import the package by its name, as a user's code does.
  resolve: {
    alias: {
      "@holdover/agent/openai": fileURLToPath(new URL("./src/openai.ts", import.meta.url)),
      "@holdover/agent": fileURLToPath(new URL("./src/index.ts", import.meta.url)),
    },
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    globalSetup: ["test/dev-server.ts"],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
