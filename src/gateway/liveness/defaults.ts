// How long the main event loop may be silent before the health port's /health/live answers 503. Ten seconds: far
// above any stall a busy node has shown (~1 s under 100 starts at once), far below what an orchestrator waits before
// restarting (Kubernetes: 3 failed probes × 10 s).
export const DEFAULT_LIVE_STALL_SECONDS = 10;
