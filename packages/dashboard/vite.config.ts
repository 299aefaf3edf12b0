/**
 * Builds the dashboard into `dist/app`: relative asset URLs (`base: "./"`, the server adds a
 * `<base href>` naming where it serves the app, mount prefix included), hashed file names under
 * `assets/` (served as immutable), JSX for Preact through esbuild (no plugin).
 */
import { fileURLToPath } from "node:url"
import { defineConfig } from "vite"

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "./",
  logLevel: "warn",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist/app",
    emptyOutDir: true,
    // No inline script: the app's pages are served with a CSP that allows scripts from 'self' only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: "es2022"
  }
})
