// Fetches from the plugin's routes. URLs are relative: the iframe's <base href="plugin/canning/">
// makes them work under /data/plugin/canning/ and under --path_prefix.

export interface WindowInfo {
  id: string;
  label: string;
  format: string;
  status: string;
  files: string[];
}
export interface WorkerInfo {
  name: string;
  rank: number;
  windows: WindowInfo[];
}
export interface RunInfo {
  name: string;
  workers: WorkerInfo[];
}
export interface RunsResponse {
  logdir: string | null;
  loading: boolean;
  error: string | null;
  runs: RunInfo[];
}

export interface Selection {
  run: string;
  worker: string;
  window: string;
}

export class ApiError extends Error {
  constructor(
    message: string,
    public status: number,
  ) {
    super(message);
  }
}

export async function getJSON<T>(route: string, params: Record<string, string> = {}, signal?: AbortSignal): Promise<T> {
  const qs = new URLSearchParams(params).toString();
  const url = `./${route}${qs ? `?${qs}` : ""}`;
  let resp: Response;
  try {
    resp = await fetch(url, { signal, headers: { Accept: "application/json" } });
  } catch (e) {
    if ((e as Error).name === "AbortError") throw e;
    throw new ApiError(`Cannot reach TensorBoard (${(e as Error).message}). Is it still running?`, 0);
  }
  let body: unknown = null;
  try {
    body = await resp.json();
  } catch {
    body = null;
  }
  if (!resp.ok) {
    const msg =
      body && typeof body === "object" && "error" in body ? String((body as { error: unknown }).error) : `HTTP ${resp.status}`;
    throw new ApiError(msg, resp.status);
  }
  return body as T;
}

export function windowParams(sel: Selection): Record<string, string> {
  return { run: sel.run, worker: sel.worker, window: sel.window };
}
