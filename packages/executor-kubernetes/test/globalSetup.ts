import { ensureEngine, ensureTestImage } from "@agent-runs/executor-docker/testing"

// Once per test run: the Docker engine the API server double runs pods on, and the test image.
export default function setup(): void {
  ensureEngine()
  ensureTestImage()
}
