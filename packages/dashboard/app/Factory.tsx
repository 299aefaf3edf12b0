/**
 * The factory's other pages: environments, connected self-hosted workers and the team's secrets
 * (names and times only: the API never returns a value). Schedules are in `Schedules.tsx`,
 * webhooks in `Webhooks.tsx`.
 */
import { formatTime } from "./format.js"
import { Empty, Section, useApi } from "./Section.js"

interface Environment {
  readonly uid: string
  readonly config: { readonly name: string; readonly description: string | null; readonly docker_image: string | null }
  readonly setup_failed: boolean
  readonly updated_at: string
}

export const EnvironmentsPage = () => {
  const read = useApi<{ environments: ReadonlyArray<Environment> }>("/agent/environments")
  return (
    <Section title="Environments" read={read}>
      {({ environments }) => (
        <table class="list">
          <caption class="visually-hidden">Environments</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Setup</th><th scope="col" class="wide">Image</th><th scope="col" class="wide">Updated</th></tr></thead>
          <tbody>
            {environments.length === 0 ? <Empty columns={4} text="No environments." /> : environments.map((environment) => (
              <tr key={environment.uid}>
                <td>{environment.config.name}<div class="muted"><code>{environment.uid}</code></div></td>
                <td>{environment.setup_failed ? <span class="error">failed</span> : "ok"}</td>
                <td class="wide">{environment.config.docker_image ?? "—"}</td>
                <td class="wide">{formatTime(environment.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  )
}

interface Worker {
  readonly worker_id: string
  readonly display_name: string
  readonly connected_at: string
  readonly last_heartbeat_at: string
  readonly labels: ReadonlyArray<string>
  readonly capacity: number
  readonly active_runs: number
}

export const WorkersPage = () => {
  const read = useApi<{ workers: ReadonlyArray<Worker> }>("/agent/connected-self-hosted-workers")
  return (
    <Section title="Self-hosted workers" read={read}>
      {({ workers }) => (
        <table class="list">
          <caption class="visually-hidden">Connected self-hosted workers</caption>
          <thead><tr><th scope="col">Worker</th><th scope="col">Runs</th><th scope="col">Last heartbeat</th><th scope="col" class="wide">Labels</th></tr></thead>
          <tbody>
            {workers.length === 0 ? <Empty columns={4} text="No worker is connected." /> : workers.map((worker) => (
              <tr key={worker.worker_id}>
                <td>{worker.display_name}<div class="muted"><code>{worker.worker_id}</code></div></td>
                <td>{worker.active_runs} of {worker.capacity}</td>
                <td>{formatTime(worker.last_heartbeat_at)}</td>
                <td class="wide">{worker.labels.join(", ") || "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  )
}

export const SecretsPage = () => {
  const read = useApi<{ secrets: ReadonlyArray<{ name: string; created_at: string; updated_at: string }> }>("/agent/secrets")
  return (
    <Section title="Secrets" read={read}>
      {({ secrets }) => (
        <>
          <p class="muted">Names only: the API never returns a secret's value.</p>
          <table class="list">
            <caption class="visually-hidden">The team's secrets</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              {secrets.length === 0 ? <Empty columns={3} text="No secrets." /> : secrets.map((secret) => (
                <tr key={secret.name}>
                  <td><code>{secret.name}</code></td>
                  <td>{formatTime(secret.created_at)}</td>
                  <td>{formatTime(secret.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Section>
  )
}
