import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// The app's code that does not need a page (app/sse.ts), in Node; the pages are tested in a
// browser by packages/server/test/dashboard*.test.ts.
export default mergeConfig(shared, defineProject({ test: { name: "dashboard" } }))
