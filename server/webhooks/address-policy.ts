import { BlockList, isIP } from 'node:net';

// Where webhooks may go (CONSOLE's smallest version, for ENGINE to own and extend with
// the connect-time check): https only (http only for a host the owner's configuration
// allows), and never to a literal loopback, private, link-local, metadata or otherwise
// non-public address unless that host is allowed. Names are checked again at connect time.

/** WEBHOOK_ALLOWED_HOSTS: comma-separated host names or addresses a webhook may reach anyway. */
export function allowedWebhookHosts(source: string | undefined = process.env.WEBHOOK_ALLOWED_HOSTS): string[] {
  return (source ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
}

// Every range that is not the public internet: this host, private networks, link-local
// (the cloud metadata address 169.254.169.254 among them), shared, documentation,
// benchmarking, multicast and reserved space; IPv4-mapped and NAT64 IPv6 forms too.
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) NON_PUBLIC.addSubnet(network, prefix, 'ipv6');

/** Why a literal address is not a public one, or null when it is (or is a name, not an address). */
export function nonPublicAddress(host: string): string | null {
  const bare = host.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 0) return null;
  return NON_PUBLIC.check(bare, family === 4 ? 'ipv4' : 'ipv6') ? `${bare} is not a public address` : null;
}

/** The reason a webhook URL is refused, or null when it may be used. */
export function refusedWebhookUrl(url: string, allowedHosts: readonly string[] = allowedWebhookHosts()): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute URL, e.g. https://example.com/hooks/waypost';
  }
  const host = parsed.hostname.toLowerCase();
  const allowed = allowedHosts.includes(host) || allowedHosts.includes(host.replace(/^\[|\]$/g, ''));
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && allowed)) {
    return parsed.protocol === 'http:' ? 'must be https (http only for a host in WEBHOOK_ALLOWED_HOSTS)' : 'must be an https URL';
  }
  if (parsed.username || parsed.password) return 'must not carry a user name or password';
  if (allowed) return null;
  if (host === 'localhost' || host.endsWith('.localhost')) return `${host} is a loopback name`;
  const why = nonPublicAddress(host);
  return why ? `${why}: webhooks go to public addresses only` : null;
}
