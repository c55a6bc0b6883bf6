import { defineConfig } from "vitest/config";

// Every test runs against a real nats-server: the global setup builds the
// project's own binary and runs `holdover dev --no-demo` on ephemeral ports
// (the embedded server, the question worker, the gateway), then stops it.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    globalSetup: ["test/dev-server.ts"],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
