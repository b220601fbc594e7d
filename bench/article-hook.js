#!/usr/bin/env node
// The hot path of the article's Node hook (mcp-health-check.js, in
// /work/shared/seed/mcp-health-check-traps.md), put together from the
// fragments the article quotes, for BenchmarkHookProcess to run in the
// same loop as nightwatch-hook: read the payload, name the server
// (extractMcpTarget, lines 133-167), read the cache (ECC_MCP_HEALTH_STATE_PATH,
// else ~/.claude/mcp-health-cache.json), then its two gates
// (handlePreToolUse, lines 567-630): healthy within expiresAt passes,
// unhealthy before nextRetryAt is blocked. The probe, reconnect and
// PostToolUseFailure paths are left out (a cache hit and a cached block
// never reach them), but their modules are required as the whole hook
// requires them at start-up. This is a lower bound of the article's
// hook's cost: the real file is some 700 lines for Node to parse.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
require('http');
require('https');
require('child_process');

function shouldFailOpen() {
  return /^(1|true|yes)$/i.test(String(process.env.ECC_MCP_HEALTH_FAIL_OPEN || ''));
}

function extractMcpTarget(input) {
  const explicitServer = input.server
    || input.mcp_server
    || input.tool_input?.server
    || input.tool_input?.mcp_server
    || input.tool_input?.connector
    || null;
  const toolName = String(input.tool_name || '');
  if (!toolName.startsWith('mcp__')) {
    return null;
  }
  const segments = toolName.slice(5).split('__');
  if (segments.length < 2 || !segments[0]) {
    return null;
  }
  const server = typeof explicitServer === 'string' ? explicitServer
    : (explicitServer && explicitServer.name) || segments[0];
  return { server, tool: segments.slice(1).join('__') };
}

function statePath() {
  return process.env.ECC_MCP_HEALTH_STATE_PATH
    || path.join(os.homedir(), '.claude', 'mcp-health-cache.json');
}

function loadState() {
  try {
    const state = JSON.parse(fs.readFileSync(statePath(), 'utf8'));
    if (state && typeof state === 'object' && state.servers) {
      return state;
    }
  } catch { /* a missing or broken cache is an empty one */ }
  return { version: 1, servers: {} };
}

function handlePreToolUse(rawInput, input) {
  const logs = [];
  const target = extractMcpTarget(input);
  if (!target) {
    return { rawInput, exitCode: 0, logs };
  }
  const now = Date.now();
  const state = loadState();
  const previous = state.servers[target.server] || {};
  // 第1ゲート: healthy かつキャッシュ有効 → プローブなしで通過
  if (previous.status === 'healthy' && Number(previous.expiresAt || 0) > now) {
    return { rawInput, exitCode: 0, logs };
  }
  // 第2ゲート: unhealthy かつクールダウン中 → プローブなしでブロック
  if (previous.status === 'unhealthy' && Number(previous.nextRetryAt || 0) > now) {
    logs.push(
      `[MCPHealthCheck] ${target.server} is marked unhealthy until ${new Date(previous.nextRetryAt).toISOString()}; skipping ${target.tool || 'tool'}`
    );
    return { rawInput, exitCode: shouldFailOpen() ? 0 : 2, logs };
  }
  // A miss would probe here; the benchmark never asks for one.
  logs.push(`[MCPHealthCheck] ${target.server}: no cached verdict (this reconstruction does not probe)`);
  return { rawInput, exitCode: 0, logs };
}

const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const rawInput = Buffer.concat(chunks).toString('utf8');
  let input = {};
  try {
    input = JSON.parse(rawInput);
  } catch { /* the article falls back to a regular expression here */ }
  const result = handlePreToolUse(rawInput, input);
  for (const line of result.logs) {
    process.stderr.write(line + '\n');
  }
  process.stdout.write(result.rawInput);
  process.exit(result.exitCode);
});
