import { expect } from 'chai';
import { programHook, sameToolCall, toolCallText } from '../../controller/sessions/program-hooks.js';

// The JSON below is what Claude Code 2.1.332 handed its hooks on stdin (run interactively in tmux against the
// scripted model server), cut to the fields that matter; StopFailure's is from its hook schema (`error` one of
// `rate_limit`, `overloaded`, `authentication_failed`, …, `error_details` optional).
describe("a program's hooks, as Claude Code reports them", () => {
  it('reads each hook’s fields, and ignores the rest', () => {
    expect(
      programHook('PermissionRequest', {
        session_id: '466dead3-6626-4043-916a-272de28dc0cd',
        transcript_path: '/h/.claude/projects/x/466dead3.jsonl',
        cwd: '/w',
        permission_mode: 'default',
        hook_event_name: 'PermissionRequest',
        tool_name: 'Bash',
        tool_input: { command: 'touch made.txt', description: 'Run the command' },
        permission_suggestions: [{ type: 'setMode', mode: 'acceptEdits', destination: 'session' }],
      }),
    ).to.deep.equal({
      event: 'PermissionRequest',
      conversation: '466dead3-6626-4043-916a-272de28dc0cd',
      toolName: 'Bash',
      toolInput: { command: 'touch made.txt', description: 'Run the command' },
    });
    expect(
      programHook('Notification', {
        session_id: 's',
        message: 'Claude needs your permission',
        notification_type: 'permission_prompt',
      }),
    ).to.deep.include({ notificationType: 'permission_prompt', message: 'Claude needs your permission' });
    expect(
      programHook('Stop', { session_id: 's', stop_hook_active: false, last_assistant_message: 'You said: hi' }),
    ).to.deep.include({ lastMessage: 'You said: hi' });
    expect(programHook('UserPromptSubmit', { prompt: 'hello there' })).to.deep.include({ prompt: 'hello there' });
    expect(programHook('StopFailure', { error: 'rate_limit', error_details: '429 Too Many Requests' })).to.deep.include(
      {
        error: 'rate_limit: 429 Too Many Requests',
      },
    );
    expect(programHook('StopFailure', {}).error).to.equal('the turn failed');
    expect(programHook('Stop')).to.deep.equal({ event: 'Stop' });
  });

  it('names a tool call as a person reads it, and tells one call from another', () => {
    expect(toolCallText('Bash', { command: 'make\n  test' })).to.equal('Bash(make test)');
    expect(toolCallText('Write', { file_path: '/w/a.txt', content: 'x' })).to.equal('Write(/w/a.txt)');
    expect(toolCallText('TodoWrite', { todos: [] })).to.equal('TodoWrite');
    expect(toolCallText(undefined, undefined)).to.equal('a tool');
    expect(toolCallText('Bash', { command: 'x'.repeat(300) })).to.have.length(206);
    expect(sameToolCall({ name: 'Bash', input: { command: 'a' } }, { name: 'Bash', input: { command: 'a' } })).to.equal(
      true,
    );
    expect(sameToolCall({ name: 'Bash', input: { command: 'a' } }, { name: 'Bash', input: { command: 'b' } })).to.equal(
      false,
    );
  });
});
