import { defineConfig } from "vitest/config";

// The question modules are framework-free and DOM-free, so tests run in
// plain Node with injected clocks and storage.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
