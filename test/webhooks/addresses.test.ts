// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyAddress } from '../../src/webhooks/addresses.ts';

describe('classifying webhook target addresses', () => {
  it('names every special-purpose range and lets only public unicast through', () => {
    const cases: [string, string][] = [
      ['8.8.8.8', 'public'],
      ['172.32.0.1', 'public'],
      ['100.128.0.1', 'public'],
      ['2606:4700::1111', 'public'],
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['169.254.0.1', 'link_local'],
      ['fe80::1', 'link_local'],
      ['fe80::1%eth0', 'link_local'],
      ['100.64.0.1', 'shared'],
      ['100.127.255.255', 'shared'],
      ['169.254.169.254', 'metadata'],
      ['168.63.129.16', 'metadata'],
      ['fd00:ec2::254', 'metadata'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['224.0.0.1', 'multicast'],
      ['ff02::1', 'multicast'],
      ['240.0.0.1', 'reserved'],
      ['255.255.255.255', 'reserved'],
      ['192.0.2.1', 'reserved'],
      ['198.18.0.1', 'reserved'],
      ['2001:db8::1', 'reserved'],
      ['::127.0.0.1', 'reserved'],
      ['1::', 'reserved'],
      ['not-an-ip', 'reserved'],
    ];
    for (const [address, kind] of cases) assert.equal(classifyAddress(address), kind, address);
  });

  it('judges IPv6 forms that embed an IPv4 address by that address', () => {
    const cases: [string, string][] = [
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['[::ffff:a9fe:a9fe]', 'metadata'],
      ['::ffff:8.8.8.8', 'public'],
      ['64:ff9b::10.0.0.1', 'private'],
      ['2002:c0a8:0101::1', 'private'],
      ['2002:0808:0808::1', 'public'],
    ];
    for (const [address, kind] of cases) assert.equal(classifyAddress(address), kind, address);
  });
});
