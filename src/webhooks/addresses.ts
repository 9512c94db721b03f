import { isIP } from 'node:net';

/** What an IP address is, for deciding whether a webhook may be sent to it. */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'shared'
  | 'metadata'
  | 'multicast'
  | 'reserved';

export const ADDRESS_CLASS_NAMES: Record<AddressClass, string> = {
  public: 'a public address',
  unspecified: 'an unspecified address',
  loopback: 'a loopback address',
  private: 'a private address',
  link_local: 'a link-local address',
  shared: 'a carrier-grade NAT address',
  metadata: 'a cloud metadata address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
};

type Range = readonly [base: string, bits: number, kind: AddressClass];

/** First match wins, so the metadata hosts come before the link-local and private ranges holding them. */
const IPV4_RANGES: readonly Range[] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared'],
  ['127.0.0.0', 8, 'loopback'],
  ['168.63.129.16', 32, 'metadata'], // Azure's WireServer, a public address answering only inside Azure
  ['169.254.169.254', 32, 'metadata'],
  ['169.254.0.0', 16, 'link_local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'reserved'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const IPV6_RANGES: readonly Range[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fd00:ec2::254', 128, 'metadata'],
  ['fc00::', 7, 'private'],
  ['fe80::', 10, 'link_local'],
  ['fec0::', 10, 'link_local'],
  ['ff00::', 8, 'multicast'],
  ['64:ff9b:1::', 48, 'reserved'],
  ['2001:db8::', 32, 'reserved'],
  ['2001::', 23, 'reserved'],
  ['3fff::', 20, 'reserved'],
];

/** IPv6 forms that carry an IPv4 address: the IPv4 address decides. [prefix, bits, shift of the IPv4 part] */
const EMBEDDING_IPV4: readonly (readonly [string, number, bigint])[] = [
  ['::ffff:0:0', 96, 0n], // IPv4-mapped
  ['64:ff9b::', 96, 0n], // NAT64
  ['2002::', 16, 80n], // 6to4
];

function ipv4ToBigInt(address: string): bigint {
  return address.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6ToBigInt(address: string): bigint {
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const v4 = ipv4ToBigInt(dotted[1]);
    text = `${text.slice(0, dotted.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups =
    tail === undefined
      ? headGroups
      : [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function inRange(value: bigint, width: number, base: bigint, bits: number): boolean {
  const shift = BigInt(width - bits);
  return value >> shift === base >> shift;
}

function classifyIpv4(value: bigint): AddressClass {
  for (const [base, bits, kind] of IPV4_RANGES) {
    if (inRange(value, 32, ipv4ToBigInt(base), bits)) return kind;
  }
  return 'public';
}

function classifyIpv6(value: bigint): AddressClass {
  for (const [prefix, bits, shift] of EMBEDDING_IPV4) {
    if (inRange(value, 128, ipv6ToBigInt(prefix), bits)) return classifyIpv4((value >> shift) & 0xffffffffn);
  }
  for (const [base, bits, kind] of IPV6_RANGES) {
    if (inRange(value, 128, ipv6ToBigInt(base), bits)) return kind;
  }
  // Only 2000::/3 is allocated for global unicast; everything else is not a place to send to.
  return inRange(value, 128, 0x2000n << 112n, 3) ? 'public' : 'reserved';
}

/** The class of an IP address (text as DNS or a URL gives it); anything that is not an IP is `reserved`. */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  switch (isIP(bare)) {
    case 4:
      return classifyIpv4(ipv4ToBigInt(bare));
    case 6:
      return classifyIpv6(ipv6ToBigInt(bare));
    default:
      return 'reserved';
  }
}
