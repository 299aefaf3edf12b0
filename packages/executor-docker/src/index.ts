/**
 * @agent-runs/executor-docker: the `Executor` port of `@agent-runs/core` on the Docker Engine.
 * `DockerExecutor.layer({ root, reposDir, image, ... })`.
 */
export * as DockerExecutor from "./DockerExecutor.js"
