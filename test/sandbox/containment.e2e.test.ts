import { mkdir, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import type { CodeSandbox } from '../../src/capabilities/sandbox/code-sandbox.js';
import { FAKE_OPENAI_KEY, FAKE_SLACK_BOT_TOKEN } from '../helpers/fake-secrets.js';
import { MB, processesWith, startSandbox, TEST_LIMITS, type SandboxFixture } from './sandbox-helper.js';

/**
 * Code that tries to get out of the sandbox, and must not. Each test runs real code under the real
 * bwrap, as root when the suite runs as root (as CI does).
 */

let fx: SandboxFixture;
beforeAll(async () => {
  fx = await startSandbox();
});
afterAll(async () => {
  await fx?.close();
});

function need(ctx: TestContext): CodeSandbox {
  if (!fx.sandbox) ctx.skip();
  return fx.sandbox!;
}

describe('run_code sandbox containment', () => {
  it('has no network: a listener on 127.0.0.1 of the host is unreachable', async (ctx) => {
    const sandbox = need(ctx);
    let connections = 0;
    const server = net.createServer((s) => {
      connections += 1;
      s.end('secret-from-host');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const r = await sandbox.run({
        workspace: fx.workspace('net'),
        language: 'python',
        code: `import socket\ntry:\n    s = socket.create_connection(("127.0.0.1", ${port}), timeout=3)\n    print("CONNECTED", s.recv(100))\nexcept OSError as e:\n    print("refused:", e)\ntry:\n    socket.getaddrinfo("example.com", 80)\n    print("DNS OK")\nexcept OSError as e:\n    print("no dns:", e)\nl = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()\nc = socket.create_connection(l.getsockname(), timeout=3)\nprint("own loopback up")`,
        timeoutMs: 15_000,
      });
      expect(r.stdout).toContain('refused:');
      expect(r.stdout).not.toContain('CONNECTED');
      expect(r.stdout).toContain('no dns:');
      // The sandbox's own loopback is up (bwrap brings it up) and reaches only the sandbox itself.
      expect(r.stdout).toContain('own loopback up');
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it('cannot see the store file, the checkout, the home folder or host files like /etc/shadow', async (ctx) => {
    const sandbox = need(ctx);
    const storeFile = path.join(fx.dir, 'hermes.sqlite');
    await writeFile(storeFile, 'STORE-SECRET-MARKER');
    const checkoutFile = path.resolve('package.json');
    const r = await sandbox.run({
      workspace: fx.workspace('files'),
      language: 'bash',
      code: [
        `cat ${storeFile} 2>&1 || echo "no store"`,
        `cat ${checkoutFile} 2>&1 || echo "no checkout"`,
        'cat /etc/shadow 2>&1 || echo "no shadow"',
        'cat /etc/passwd 2>&1 || echo "no passwd"',
        `ls ${process.env.HOME ?? '/root'} 2>&1 || echo "no home"`,
        'echo "top: $(ls / | tr "\\n" " ")"',
        'grep -rl STORE-SECRET-MARKER /workspace /tmp /run /etc /dev /opt 2>/dev/null | head -5; echo "search done"',
      ].join('\n'),
      timeoutMs: 30_000,
    });
    expect(r.stdout).toContain('no store');
    expect(r.stdout).toContain('no checkout');
    expect(r.stdout).toContain('no shadow');
    expect(r.stdout).toContain('no passwd');
    expect(r.stdout).toContain('no home');
    expect(r.stdout).toContain('search done');
    expect(r.stdout).not.toContain('STORE-SECRET-MARKER');
    expect(r.stdout).not.toContain('"name": "hermes-agent"');
    // Only system folders and the sandbox's own: nothing of the host's /root, /home, /srv, /var, /data.
    const top = /top: (.*)/.exec(r.stdout)?.[1]?.trim().split(' ') ?? [];
    expect(top.filter((d) => !['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32', 'usr', 'etc', 'dev', 'proc', 'tmp', 'run', 'workspace', 'opt'].includes(d))).toEqual([]);
  });

  it('writes only inside the workspace: system folders, / and the folder above are read-only or absent', async (ctx) => {
    const sandbox = need(ctx);
    const ws = fx.workspace('write');
    const parent = path.dirname(await ws.ensure());
    const before = await readdir(parent);
    const r = await sandbox.run({
      workspace: ws,
      language: 'python',
      code: [
        'import os',
        'for p in ["/usr/evil", "/etc/evil", "/evil", "../evil", "/workspace/../evil", "/proc/evil"]:',
        '    try:',
        '        open(p, "w").write("x")',
        '        print("WROTE", p)',
        '    except OSError as e:',
        '        print("denied", p, e.errno)',
        'open("/tmp/scratch", "w").write("tmp is fine")',
        'open("inside.txt", "w").write("inside")',
        'print("done")',
      ].join('\n'),
      timeoutMs: 15_000,
    });
    expect(r.stdout).not.toContain('WROTE');
    expect(r.stdout.match(/denied/g)).toHaveLength(6);
    expect(r.stdout).toContain('done');
    expect(r.files.created).toEqual(['inside.txt']);
    expect(await readdir(parent)).toEqual(before);
    // The fresh /tmp does not outlive the run.
    const again = await sandbox.run({ workspace: ws, language: 'bash', code: 'ls /tmp | wc -l', timeoutMs: 15_000 });
    expect(again.stdout.trim()).toBe('0');
  });

  it("gets none of the bot's environment: the real secret values stay out", async (ctx) => {
    const sandbox = need(ctx);
    const saved = { ...process.env };
    process.env.OPENAI_API_KEY = FAKE_OPENAI_KEY;
    process.env.SLACK_BOT_TOKEN = FAKE_SLACK_BOT_TOKEN;
    try {
      const r = await sandbox.run({
        workspace: fx.workspace('env'),
        language: 'bash',
        code: 'env; echo ---; for f in /proc/*/environ; do tr "\\0" "\\n" < "$f"; done 2>/dev/null; echo ---; ps -ef 2>/dev/null || ls /proc',
        timeoutMs: 15_000,
      });
      expect(r.exitCode).toBe(0);
      const all = r.stdout + r.stderr;
      expect(all).not.toContain(FAKE_OPENAI_KEY);
      expect(all).not.toContain(FAKE_SLACK_BOT_TOKEN);
      const names = r.stdout.split('---')[0]!.split('\n').filter(Boolean).map((l) => l.split('=')[0]);
      expect(new Set(names)).toEqual(new Set(['PATH', 'HOME', 'LANG', 'PWD', 'SHLVL', '_']));
    } finally {
      process.env = saved;
    }
  });

  it('stops a fork bomb at 64 processes, even when the bot is root', async (ctx) => {
    const sandbox = need(ctx);
    const r = await sandbox.run({
      workspace: fx.workspace('fork'),
      language: 'python',
      code: [
        'import os, time',
        'n = 0',
        'try:',
        '    for i in range(1000):',
        '        if os.fork() == 0:',
        '            time.sleep(3)',
        '            os._exit(0)',
        '        n += 1',
        'except OSError as e:',
        '    print("fork refused after", n, e.errno)',
        'print("forked", n)',
      ].join('\n'),
      timeoutMs: 20_000,
    });
    const forked = Number(/forked (\d+)/.exec(r.stdout)?.[1]);
    expect(r.stdout).toContain('fork refused after');
    expect(forked).toBeLessThan(64);
    expect(forked).toBeGreaterThan(10);
  });

  it('ends a classic bash fork bomb at the time limit, with every process gone', async (ctx) => {
    const sandbox = need(ctx);
    // The token is the bomb's $0, so every forked copy carries it in its command line.
    const token = `bomb-${process.pid}-${Date.now()}`;
    const r = await sandbox.run({ workspace: fx.workspace('bomb'), language: 'bash', code: `bash -c 'b() { b | b & }; b; sleep 30' ${token}`, timeoutMs: 3_000 });
    expect(r.durationMs).toBeLessThan(8_000);
    expect(r.timedOut).toBe(true);
    expect(await processesWith(token)).toEqual([]);
  });

  it('stops a memory hog in one process (rlimit) and across processes (memory watch)', async (ctx) => {
    const sandbox = need(ctx);
    const one = await sandbox.run({
      workspace: fx.workspace('mem'),
      language: 'python',
      code: 'a = []\ntry:\n    for i in range(100):\n        a.append(bytearray(50 * 1024 * 1024))\n    print("GOT 5 GB")\nexcept MemoryError:\n    print("MemoryError at", len(a) * 50, "MB")',
      timeoutMs: 20_000,
    });
    expect(one.stdout).toContain('MemoryError at');
    expect(one.stdout).not.toContain('GOT 5 GB');
    expect(Number(/at (\d+) MB/.exec(one.stdout)?.[1])).toBeLessThanOrEqual(256);

    // Each of four children stays under the per-process limit; together they are over it.
    const many = await sandbox.run({
      workspace: fx.workspace('mem'),
      language: 'python',
      code: 'import os, time\nfor i in range(4):\n    if os.fork() == 0:\n        b = bytearray(150 * 1024 * 1024)\n        for j in range(0, len(b), 4096): b[j] = 1\n        time.sleep(20)\n        os._exit(0)\ntime.sleep(20)\nprint("survived")',
      timeoutMs: 20_000,
    });
    expect(many.stoppedFor).toBe('memory');
    expect(many.stdout).not.toContain('survived');
  });

  it('cannot grow past the memory limit through /dev, /dev/shm or /tmp: /dev is read-only, the rest capped and counted', async (ctx) => {
    const sandbox = need(ctx);
    // The attack: 363 MB written to /dev/shm under a 256 MB limit went unnoticed, because --dev
    // gave a writable, uncapped tmpfs whose pages belong to no process the memory watch sums.
    const fill = [
      'import sys',
      // One file per MB: each file is capped (RLIMIT_FSIZE), their sum was not.
      'def fill(path, mb):',
      '    n = 0',
      '    try:',
      '        for i in range(mb):',
      '            with open(f"{path}{i}", "wb", buffering=0) as f:',
      '                f.write(bytes(1 << 20)); n += 1',
      '    except OSError as e:',
      '        print(path, "refused after", n, "MB", flush=True); return',
      '    print(path, "WROTE", n, "MB", flush=True)',
      'for p in sys.argv[1:] or ["/dev/hog", "/dev/shm/hog", "/tmp/hog"]:',
      '    fill(p, 300)',
    ].join('\n');
    const r = await sandbox.run({ workspace: fx.workspace('devshm'), language: 'python', code: fill, timeoutMs: 60_000 });
    expect(r.stdout).not.toContain('WROTE');
    expect(r.stdout).toContain('/dev/hog refused after 0 MB');
    const written = [...r.stdout.matchAll(/refused after (\d+) MB/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(written).toBeLessThanOrEqual(2 * (TEST_LIMITS.tmpBytes / MB));

    // What sits in /tmp and /dev/shm counts in the limit: a process just under it, plus full scratch
    // space, is over it and is stopped; the same process alone is not.
    const hold = (scratch: boolean) =>
      [
        'import time',
        'b = bytearray(225 * 1024 * 1024)',
        'for j in range(0, len(b), 4096): b[j] = 1',
        ...(scratch ? ['for p in ["/tmp/a", "/dev/shm/a"]:', '    try:', '        open(p, "wb").write(bytes(16 << 20))', '    except OSError:', '        pass'] : []),
        'time.sleep(2)',
        'print("survived")',
      ].join('\n');
    const alone = await sandbox.run({ workspace: fx.workspace('devshm'), language: 'python', code: hold(false), timeoutMs: 30_000 });
    expect(alone.stoppedFor).toBeUndefined();
    expect(alone.stdout).toContain('survived');
    const withScratch = await sandbox.run({ workspace: fx.workspace('devshm'), language: 'python', code: hold(true), timeoutMs: 30_000 });
    expect(withScratch.stoppedFor).toBe('memory');
    expect(withScratch.stdout).not.toContain('survived');
  }, 120_000);

  it('kills an infinite loop at the time limit and leaves no process behind', async (ctx) => {
    const sandbox = need(ctx);
    const started = Date.now();
    const nap = `100.${process.pid}${Date.now() % 100_000}`;
    const r = await sandbox.run({ workspace: fx.workspace('loop'), language: 'javascript', code: `require("child_process").spawn("sleep", ["${nap}"]); for (;;) {}`, timeoutMs: 2_000 });
    expect(r.timedOut).toBe(true);
    expect(r.stoppedFor).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await processesWith(nap)).toEqual([]);
  });

  it('caps a file at the file-size limit', async (ctx) => {
    const sandbox = need(ctx);
    const r = await sandbox.run({ workspace: fx.workspace('fsize'), language: 'bash', code: 'head -c 30000000 /dev/zero > big.bin; echo "exit $?"', timeoutMs: 15_000 });
    expect(r.stdout).toMatch(/exit (153|1)/);
    const size = (await stat(path.join(fx.workspace('fsize').root, 'big.bin'))).size;
    expect(size).toBeLessThanOrEqual(20 * MB);
  });

  it('a symlink made inside leads nowhere outside: the link resolves inside the sandbox only', async (ctx) => {
    const sandbox = need(ctx);
    const ws = fx.workspace('link');
    const root = await ws.ensure();
    const secret = path.join(fx.dir, 'host-secret.txt');
    await writeFile(secret, 'HOST-SECRET');
    await mkdir(path.join(root, 'sub'), { recursive: true });
    await symlink(secret, path.join(root, 'sub', 'planted'));
    const r = await sandbox.run({ workspace: ws, language: 'bash', code: 'cat sub/planted 2>&1; ln -s / rootlink; cat rootlink/etc/shadow 2>&1; echo end', timeoutMs: 15_000 });
    expect(r.stdout).not.toContain('HOST-SECRET');
    expect(r.stdout).toContain('end');
  });

  it('keeps head and tail of a huge output, saves the rest in the workspace, and stops past 8 MB', async (ctx) => {
    const sandbox = need(ctx);
    const ws = fx.workspace('out');
    const r = await sandbox.run({ workspace: ws, language: 'python', code: 'print("FIRST")\nfor i in range(200000): print("line", i)\nprint("LAST")', timeoutMs: 20_000 });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.length).toBeLessThan(11_000);
    expect(r.stdout).toContain('FIRST');
    expect(r.stdout).toContain('LAST');
    expect(r.stdout).toContain('characters left out');
    expect(r.fullOutput).toMatch(/^outputs\/run-.*\.txt$/);
    const full = await readFile(path.join(ws.root, r.fullOutput!), 'utf8');
    expect(full).toContain('line 123456\n');

    const endless = await sandbox.run({ workspace: ws, language: 'bash', code: 'yes "spam spam spam"', timeoutMs: 30_000 });
    expect(endless.stoppedFor).toBe('output');
    expect(endless.stdout.length).toBeLessThan(11_000);
  });
});
