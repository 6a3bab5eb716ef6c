import { describe, expect, it } from 'vitest';
import { checkScopes } from '../../adapters/slack/startup-check.js';
import { bwrapArgs, type SystemLayout } from '../../src/capabilities/sandbox/bwrap-args.js';
import { HeadTail } from '../../src/capabilities/sandbox/output-capture.js';
import { explain } from '../../src/capabilities/sandbox/probe.js';
import { safeFileName } from '../../src/capabilities/workspace/intake.js';
import { FULL_SCOPES } from '../fakes/slack/fake-slack.js';

const LAYOUT: SystemLayout = {
  bwrap: '/usr/bin/bwrap',
  prlimit: '/usr/bin/prlimit',
  roDirs: ['/usr', '/lib64'],
  links: [{ path: '/bin', target: 'usr/bin' }],
  etc: ['/etc/ld.so.cache'],
  interpreters: { python: '/usr/bin/python3', bash: '/usr/bin/bash', javascript: '/opt/hermes/node' },
  extraBinds: [{ host: '/home/me/.nvm/node', inside: '/opt/hermes/node' }],
};
const LIMITS = { memoryBytes: 512, maxProcesses: 64, maxFileBytes: 1000, cpuSeconds: 61, tmpBytes: 64 };

describe('bwrap command line', () => {
  it('unshares everything, shares no network, binds only system folders read-only and the workspace read-write', () => {
    const args = bwrapArgs(LAYOUT, { workspace: '/data/ws/s1', language: 'bash', limits: LIMITS });
    const joined = args.join(' ');
    expect(args.slice(0, 3)).toEqual(['--unshare-all', '--unshare-user', '--disable-userns']);
    expect(args).not.toContain('--share-net');
    expect(joined).toContain('--die-with-parent');
    expect(joined).toContain('--ro-bind /usr /usr --ro-bind /lib64 /lib64 --symlink usr/bin /bin --ro-bind /etc/ld.so.cache /etc/ld.so.cache --ro-bind /home/me/.nvm/node /opt/hermes/node');
    expect(joined).toContain('--bind /data/ws/s1 /workspace');
    expect(args.filter((a) => a === '--bind')).toHaveLength(1);
    expect(joined).toContain('--size 64 --tmpfs /tmp');
    expect(joined).toContain('--remount-ro / --chdir /workspace --clearenv --setenv PATH /usr/local/bin:/usr/bin:/bin --setenv HOME /tmp --setenv LANG C.UTF-8 --');
    expect(joined).toContain('/usr/bin/prlimit --nproc=64 --data=512 --fsize=1000 --cpu=61 --core=0 -- /usr/bin/bash /run/code/main.sh');
  });
});

describe('output capture', () => {
  it('keeps head and tail and says how much was left out, across split UTF-8 characters', () => {
    const cap = new HeadTail(5, 5);
    const bytes = Buffer.from('héllo wörld and more ✓✓');
    for (let i = 0; i < bytes.length; i += 3) cap.push(bytes.subarray(i, i + 3));
    cap.end();
    expect(cap.truncated).toBe(true);
    expect(cap.text()).toBe('héllo\n[… 13 characters left out …]\nre ✓✓');
  });
});

describe('start-up messages', () => {
  it('turns bwrap errors into the fix', () => {
    expect(explain('bwrap: No permissions to creating new namespace', '/w')).toContain('sysctl -w kernel.unprivileged_userns_clone=1');
    expect(explain('bwrap: No permissions to creating new namespace', '/w')).toContain('--security-opt seccomp=unconfined');
  });

  it('Slack: a token without files:read or files:write gets a warning naming the scope', () => {
    const r = checkScopes(FULL_SCOPES.filter((s) => !s.startsWith('files:')));
    expect(r.errors).toEqual([]);
    expect(r.warnings.join('\n')).toMatch(/lacks the files:read scope, so the bot cannot read files people attach/);
    expect(r.warnings.join('\n')).toMatch(/lacks the files:write scope, so the bot cannot send files/);
  });

  it('attachment names become plain file names', () => {
    expect(safeFileName('../../etc/passwd')).toBe('passwd');
    expect(safeFileName('..hidden')).toBe('hidden');
    expect(safeFileName('a<b>:c?.txt')).toBe('a_b__c_.txt');
    expect(safeFileName('')).toBe('file');
  });
});
