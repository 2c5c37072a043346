import { runOnce } from 'graphile-worker';

// The peer's worker process: graphile-worker 0.17's runOnce over the jobs the bench queued,
// with a no-op task (perfTest's log_if_999), until the queue is empty. It waits for "go"
// on stdin so start-up is not timed.

const concurrency = Number(process.argv[process.argv.indexOf('--concurrency') + 1] || 4);

async function main(): Promise<void> {
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  // stdin stays open otherwise, and would keep the process alive after its work is done.
  process.stdin.destroy();
  const cpuAtGo = process.cpuUsage();
  await runOnce({
    connectionString: process.env.DATABASE_URL!,
    concurrency,
    maxPoolSize: concurrency + 2,
    noHandleSignals: true,
    taskList: {
      log_if_999: async (payload) => {
        if ((payload as { id?: number }).id === 999) process.stdout.write('Found 999!\n');
      },
    },
  });
  const cpu = process.cpuUsage(cpuAtGo);
  process.stdout.write(`result ${JSON.stringify({ cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`);
}

main().catch((error) => {
  process.stderr.write(`peer worker failed: ${String(error)}\n`);
  process.exit(1);
});
