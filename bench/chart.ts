import type { StepsResult } from './steps';

// steps.svg: steps/s (jobs/s for the peer) against worker processes, one line per
// system. Drawn by hand: recharts, the console's chart library, renders nothing
// without a browser layout pass, and no other chart library is a dependency.

const W = 860;
const H = 400;
const M = { left: 70, right: 230, top: 64, bottom: 50 };

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function stepsChart(steps: StepsResult, machine: { cores: number; postgres: string; commit: string; at: string; mode: string }): string {
  const series = [
    { name: 'graphile-worker (jobs/s)', color: '#7c3aed', points: steps.peer },
    { name: 'raw pg, same SQL', color: '#16a34a', points: steps.raw },
    { name: 'Waypost engine', color: '#dc2626', points: steps.engine },
  ];
  const xs = steps.engine.map((t) => t.processes);
  const maxY = Math.max(...series.flatMap((s) => s.points.map((p) => p.perSecond)), 1);
  const step = 10 ** Math.floor(Math.log10(maxY));
  const top = Math.ceil(maxY / step) * step;
  const x = (p: number) => M.left + ((Math.log2(p) - Math.log2(xs[0]!)) / (Math.log2(xs.at(-1)!) - Math.log2(xs[0]!) || 1)) * (W - M.left - M.right);
  const y = (v: number) => H - M.bottom - (v / top) * (H - M.top - M.bottom);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(`<text x="${M.left}" y="22" font-size="15" font-weight="600">Steps/s by worker processes (concurrency ${steps.engine[0]?.concurrency ?? '?'} each)</text>`);
  out.push(`<text x="${M.left}" y="38" fill="#555">${esc(steps.workflow)}</text>`);
  out.push(`<text x="${M.left}" y="54" fill="#555">${esc(`${machine.cores} cores, PostgreSQL ${machine.postgres.split(' ')[0]}, commit ${machine.commit}, ${machine.mode} run, ${machine.at.slice(0, 16)}Z`)}</text>`);
  for (let v = 0; v <= top; v += top / 5) {
    out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e7eb"/>`);
    out.push(`<text x="${M.left - 8}" y="${y(v) + 4}" text-anchor="end" fill="#555">${Math.round(v)}</text>`);
  }
  for (const p of xs) {
    out.push(`<line x1="${x(p)}" x2="${x(p)}" y1="${M.top}" y2="${H - M.bottom}" stroke="#f3f4f6"/>`);
    out.push(`<text x="${x(p)}" y="${H - M.bottom + 18}" text-anchor="middle" fill="#555">${p}</text>`);
  }
  out.push(`<text x="${(M.left + W - M.right) / 2}" y="${H - 12}" text-anchor="middle">worker processes</text>`);
  out.push(`<text transform="translate(18 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">per second</text>`);
  series.forEach((s, i) => {
    const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${x(p.processes).toFixed(1)},${y(p.perSecond).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2.5"/>`);
    for (const p of s.points) {
      out.push(`<circle cx="${x(p.processes).toFixed(1)}" cy="${y(p.perSecond).toFixed(1)}" r="4" fill="${s.color}"><title>${esc(s.name)}: ${p.perSecond}/s with ${p.processes}</title></circle>`);
    }
    const ly = M.top + 10 + i * 22;
    out.push(`<line x1="${W - M.right + 16}" x2="${W - M.right + 36}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2.5"/>`);
    out.push(`<text x="${W - M.right + 42}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
