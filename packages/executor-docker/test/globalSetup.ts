import { ensureEngine, ensureTestImage } from "../testing/engine.js"

// Once per test run: the engine answers and the test image exists (minutes the first time on a
// fresh machine, a second or two afterwards).
export default function setup(): void {
  ensureEngine()
  ensureTestImage()
}
