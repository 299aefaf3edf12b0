import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["**/dist/**", "**/coverage/**", "**/node_modules/**", "data/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-namespace": "off",
      "no-restricted-imports": "off"
    }
  },
  {
    // The core is pure: no Node, HTTP, SQL or Docker. Adapters bring those.
    files: ["packages/core/src/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [
          { group: ["node:*"], message: "packages/core is pure: no Node imports." },
          { group: ["@effect/platform*", "@effect/sql*", "dockerode", "better-sqlite3", "pg"], message: "packages/core is pure: adapters bring HTTP, SQL and Docker." }
        ],
        paths: ["fs", "path", "crypto", "http", "https", "child_process", "os", "net", "stream", "url", "util", "events"]
      }]
    }
  },
  {
    // The API's definition bundles for a browser (the client and the dashboard use it): no Node,
    // no server stack.
    files: ["packages/api/src/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [
          { group: ["node:*"], message: "packages/api runs in browsers: no Node imports." },
          { group: ["@effect/platform-node*", "@effect/sql*", "@agent-runs/http", "@agent-runs/server"], message: "packages/api is the API's definition only: the server stack stays out." }
        ],
        paths: ["fs", "path", "crypto", "http", "https", "child_process", "os", "net", "stream", "url", "util", "events"]
      }]
    }
  },
  {
    // Layers inside the core (docs/architecture.md): the domain and the ports know neither the
    // services nor the engine; the execution engine does not use the application services.
    files: ["packages/core/src/domain/**/*.ts", "packages/core/src/ports/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [
          { group: ["node:*"], message: "packages/core is pure: no Node imports." },
          { group: ["@effect/platform*", "@effect/sql*", "dockerode", "better-sqlite3", "pg"], message: "packages/core is pure: adapters bring HTTP, SQL and Docker." },
          { group: ["../services/*", "../engine/*"], message: "the domain and the ports depend on nothing above them (services, engine)." }
        ],
        paths: ["fs", "path", "crypto", "http", "https", "child_process", "os", "net", "stream", "url", "util", "events"]
      }]
    }
  },
  {
    files: ["packages/core/src/engine/**/*.ts"],
    ignores: ["packages/core/src/engine/Scheduler.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [
          { group: ["node:*"], message: "packages/core is pure: no Node imports." },
          { group: ["@effect/platform*", "@effect/sql*", "dockerode", "better-sqlite3", "pg"], message: "packages/core is pure: adapters bring HTTP, SQL and Docker." },
          { group: ["../services/*"], message: "the execution engine depends on the domain and the ports, not on the application services." }
        ],
        paths: ["fs", "path", "crypto", "http", "https", "child_process", "os", "net", "stream", "url", "util", "events"]
      }]
    }
  }
)
