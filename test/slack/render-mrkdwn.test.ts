import { describe, expect, it } from 'vitest';
import { renderMrkdwn } from '../../adapters/slack/render-mrkdwn.js';

describe('renderMrkdwn', () => {
  it('converts emphasis, strike and inline code', () => {
    expect(renderMrkdwn('**bold** and *it* and _it2_ and ~~gone~~ and `x < y`')).toBe('*bold* and _it_ and _it2_ and ~gone~ and `x &lt; y`');
    expect(renderMrkdwn('__also bold__ snake_case_name stays')).toBe('*also bold* snake_case_name stays');
  });

  it('converts links and keeps bare and angle links', () => {
    expect(renderMrkdwn('see [the docs](https://example.com/a?b=1&c=2) now')).toBe('see <https://example.com/a?b=1&amp;c=2|the docs> now');
    expect(renderMrkdwn('<https://example.com>')).toBe('<https://example.com>');
    expect(renderMrkdwn('[x](javascript:alert(1))')).toBe('[x](javascript:alert(1))');
  });

  it('renders headings bold and lists with bullets', () => {
    expect(renderMrkdwn('# Title\n## **Sub** title\n- one\n  * two\n1. first\n- [x] done')).toBe(
      '*Title*\n*Sub title*\n• one\n  • two\n1. first\n• ☑ done',
    );
  });

  it('keeps code blocks verbatim apart from escaping, and drops the language tag', () => {
    const md = 'before\n```ts\nconst a = b && c <d>;\n**not bold**\n```\nafter';
    expect(renderMrkdwn(md)).toBe('before\n```\nconst a = b &amp;&amp; c &lt;d&gt;;\n**not bold**\n```\nafter');
  });

  it('closes an unterminated code block', () => {
    expect(renderMrkdwn('```\ncode')).toBe('```\ncode\n```');
  });

  it('neutralises every broadcast form', () => {
    const out = renderMrkdwn('hey <!channel> <!here> <!everyone> <!subteam^S123|@devs> @channel @here @everyone');
    expect(out).not.toMatch(/<!/);
    expect(out).not.toMatch(/@(channel|here|everyone)\b/);
    expect(out).toContain('&lt;!channel&gt;');
    expect(out).toContain('&lt;!subteam^S123|@devs&gt;');
  });

  it('neutralises broadcasts inside code and link labels too', () => {
    expect(renderMrkdwn('`<!here>`')).toBe('`&lt;!here&gt;`');
    expect(renderMrkdwn('[<!channel>](https://x.y)')).toBe('<https://x.y|&lt;!channel&gt;>');
  });

  it('lets single-user and channel mentions through (labels dropped: Slack shows the real name)', () => {
    expect(renderMrkdwn('thanks <@U123ABC> in <#C999|general>')).toBe('thanks <@U123ABC> in <#C999>');
  });

  it('handles bold italics, links with parentheses, and tables (as code, for alignment)', () => {
    expect(renderMrkdwn('***both***')).toBe('*_both_*');
    expect(renderMrkdwn('[w](https://en.wikipedia.org/wiki/Foo_(bar)) after')).toBe('<https://en.wikipedia.org/wiki/Foo_(bar)|w> after');
    expect(renderMrkdwn('| a | b |\n|---|:-:|\n| 1 | <2> |\nafter')).toBe('```\n| a | b |\n|---|:-:|\n| 1 | &lt;2&gt; |\n```\nafter');
  });

  it('keeps quotes working', () => {
    expect(renderMrkdwn('> quoted **text**')).toBe('> quoted *text*');
  });
});
