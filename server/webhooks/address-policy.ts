import type { Agent } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { env } from '../env';

// Where webhooks may go (CONSOLE's smallest version, for ENGINE to own and extend with
// the connect-time check): https only (http only for a host the owner's configuration
// allows), and never to a literal loopback, private, link-local, metadata or otherwise
// non-public address unless that host is allowed. Names are checked again at connect time:
// the dispatcher connects through webhookAgent (request-filtering-agent), which judges the
// address DNS answered for that very connection, so a name resolving to 127.0.0.1, or whose
// answer changed since the endpoint was saved (DNS rebinding), is refused too. Redirects
// are never followed (a 3xx is a failed attempt), so none can lead a delivery elsewhere.

/** WEBHOOK_ALLOWED_HOSTS (server/env.ts): host names or addresses a webhook may reach anyway, lowercased, IPv6 without brackets. */
export function allowedWebhookHosts(): readonly string[] {
  return env().WEBHOOK_ALLOWED_HOSTS ?? [];
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
  // A trailing dot names the same host ("localhost.").
  const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
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

const agents = new Map<string, Agent>();

/**
 * The connection agent of a delivery to this URL: it refuses, at connect time, every
 * non-public address DNS answers (request-filtering-agent: private, loopback, link-local,
 * reserved, 0.0.0.0), unless the URL's host is allowed. Keep-alive off: each delivery
 * connects anew, so each is checked.
 */
export function webhookAgent(url: URL, allowedHosts: readonly string[] = allowedWebhookHosts()): Agent {
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  const allowed = allowedHosts.includes(host);
  const key = `${url.protocol}${allowed ? 'allowed' : 'public'}`;
  let agent = agents.get(key);
  if (!agent) {
    const options = { keepAlive: false, allowPrivateIPAddress: allowed, allowMetaIPAddress: false };
    agent = url.protocol === 'https:' ? new RequestFilteringHttpsAgent(options) : new RequestFilteringHttpAgent(options);
    agents.set(key, agent);
  }
  return agent;
}
