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
  }
)
