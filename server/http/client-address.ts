import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';

// Who is asking: the address of the socket, unless that socket is a
// proxy the deployment trusts (TRUSTED_PROXIES), in which case the address that proxy
// reports in X-Forwarded-For (proxy-addr walks the chain from the right, past trusted
// hops only). A client cannot choose its own address by sending the header itself.

/** TRUSTED_PROXIES: proxy-addr's names (loopback, linklocal, uniquelocal), addresses or CIDR ranges, comma separated. */
export function trustOf(trustedProxies: string | undefined): (address: string, hop: number) => boolean {
  const list = (trustedProxies ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return proxyaddr.compile(list);
}

export function clientAddress(req: IncomingMessage, trust: (address: string, hop: number) => boolean): string {
  return proxyaddr(req, trust);
}
