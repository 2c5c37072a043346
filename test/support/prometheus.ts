// A strict reader of Prometheus's text exposition format (version 0.0.4), for the metrics
// tests: every line must be a `# HELP`, a `# TYPE`, a blank line or a sample of a family
// whose TYPE came first; label values must be quoted and escaped; no sample twice; each
// histogram's buckets must rise with `le` up to `+Inf`, which must equal its `_count`.
// Throws with the offending line; returns the samples.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"`;
// Special values as Prometheus reads them (Go's ParseFloat: any case; prom-client writes `Nan`).
const VALUE = String.raw`[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-][iI][nN][fF]|[nN][aA][nN]`;
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*)?,?\\})? (${VALUE})(?: -?\\d+)?$`);
const HELP = new RegExp(`^# HELP (${NAME}) .*$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const ONE_LABEL = new RegExp(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"`, 'g');

const number = (text: string) => (/inf$/i.test(text) ? (text.startsWith('-') ? -Infinity : Infinity) : /^nan$/i.test(text) ? NaN : Number(text));

function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    const base = name.endsWith(suffix) ? name.slice(0, -suffix.length) : null;
    if (base && (types.get(base) === 'histogram' || types.get(base) === 'summary')) return base;
  }
  return undefined;
}

export function parsePrometheus(text: string): Sample[] {
  if (!text.endsWith('\n')) throw new Error('the exposition does not end with a newline');
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  text.slice(0, -1).split('\n').forEach((line, i) => {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line === '' || HELP.test(line)) return;
    const type = TYPE.exec(line);
    if (type) {
      if (types.has(type[1]!)) throw new Error(`${where}: a second TYPE for ${type[1]}`);
      types.set(type[1]!, type[2]!);
      return;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`${where}: not a HELP, TYPE or sample line`);
    const [, name, labelText = '', value] = sample;
    if (!familyOf(name!, types)) throw new Error(`${where}: no TYPE line before ${name}`);
    const labels: Record<string, string> = {};
    for (const m of labelText.matchAll(ONE_LABEL)) {
      if (m[1]! in labels) throw new Error(`${where}: label ${m[1]} twice`);
      labels[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`${where}: the same sample twice`);
    seen.add(key);
    samples.push({ name: name!, labels, value: number(value!) });
  });
  checkHistograms(samples, types);
  return samples;
}

function checkHistograms(samples: Sample[], types: Map<string, string>): void {
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, { le: number; value: number }[]>();
    for (const s of samples.filter((x) => x.name === `${family}_bucket`)) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${family}_bucket without le`);
      const key = JSON.stringify(Object.entries(rest).sort());
      series.set(key, [...(series.get(key) ?? []), { le: number(le), value: s.value }]);
    }
    for (const [key, buckets] of series) {
      buckets.sort((a, b) => a.le - b.le);
      buckets.forEach((b, i) => {
        if (i > 0 && b.value < buckets[i - 1]!.value) throw new Error(`${family}${key}: bucket le=${b.le} below the one before it`);
      });
      const last = buckets.at(-1)!;
      const count = samples.find((x) => x.name === `${family}_count` && JSON.stringify(Object.entries(x.labels).sort()) === key);
      if (last.le !== Infinity) throw new Error(`${family}${key}: no +Inf bucket`);
      if (!count || count.value !== last.value) throw new Error(`${family}${key}: _count is not the +Inf bucket`);
    }
  }
}

/** The sum of the samples named `name` whose labels include `labels`. */
export function total(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}
