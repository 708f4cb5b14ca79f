// tests/bench/slow-attack.mjs - the attackers of tests/bench/slow-clients.mjs, in a process of
// their own so that their work does not delay the probes' event loop (and so the figures).
// Forked with IPC: argv port; messages in: 'stats', 'stop'; out: {stats} answers, 'stopped'.
import { keepAliveClients, parkedPolls, slowloris } from '../lib/slowclients.mjs';

const port = Number(process.argv[2]);
const pauseMs = Number(process.argv[3] ?? 50);
const s = slowloris(port, 100, { byteMs: 200 });
const p = parkedPolls(port, 60);
const k = keepAliveClients(port, 64, { path: '/health', pauseMs });
process.on('message', async (m) => {
  if (m === 'stats') process.send({ slowloris: s.stats(), polls: p.stats(), keepalive: k.stats() });
  if (m === 'stop') {
    await Promise.all([s.stop(), p.stop(), k.stop()]);
    process.send('stopped');
    process.exit(0);
  }
});
