/**
 * Calls `onOrphaned` once when the process that started this one is gone (a SIGKILLed npm or
 * tsx sends no signal on, but its children are re-parented), so what `npm start` started does
 * not outlive it. Polls process.ppid on an unref'd timer that never keeps the process alive.
 * Returns a function that stops watching.
 */
export function watchParent(onOrphaned: () => void, intervalMs = 500): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onOrphaned();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
