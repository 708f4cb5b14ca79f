-- tools/Execute.lua - execute_luau: runs Luau in the plugin (edit DataModel) with loadstring.
-- print and warn are captured (and still reach Studio's output); the result is
--   {output = [{level = "info"|"warn", message}], returns = [value, ...], truncated?}
-- with returned values in the tagged encoding (Instances as paths, tables recursively).
-- A compile or runtime error fails the call; the message includes the output printed so far.
-- Runs as one ChangeHistoryService recording like any write tool, so Ctrl+Z undoes it.

local Values = require(script.Parent.Parent.Values)
local Globals = require(script.Parent.Parent.Globals)
local U = require(script.Parent.Util)

local MAX_CODE = 200000
local MAX_OUTPUT_LINES = 500
local MAX_OUTPUT_CHARS = 50000

-- error({...}) raises a table: its message field, else its JSON, instead of "table: 0x...".
local function errorText(err)
	if type(err) ~= "table" then
		return tostring(err)
	end
	if err.message ~= nil then
		return tostring(err.message)
	end
	local ok, text = pcall(function()
		return game:GetService("HttpService"):JSONEncode(Values.encode(err))
	end)
	return ok and text or tostring(err)
end

local T = {}

-- ctx.env (optional) is the environment the code sees behind print/warn/game/workspace/plugin;
-- by default the plugin's own globals.

T.execute_luau = {
	readOnly = false,
	run = function(args, ctx)
		local code = U.str(args, "code")
		if #code > MAX_CODE then
			error("code is " .. #code .. " characters; the limit is " .. MAX_CODE, 0)
		end
		local fn, cerr = loadstring(code, "=execute_luau")
		if not fn then
			error("compile error: " .. tostring(cerr), 0)
		end
		local output, chars, truncated = {}, 0, false
		-- ctx.env (tests) is a table with an __index; in Studio the globals table of Globals.lua
		-- (no getfenv on the plugin's own code: that would deoptimise the whole plugin).
		local base = ctx.env or Globals.env()
		local function capture(level, forward)
			return function(...)
				local parts = {}
				for i = 1, select("#", ...) do
					parts[i] = tostring((select(i, ...)))
				end
				local msg = table.concat(parts, " ")
				if #output < MAX_OUTPUT_LINES and chars + #msg <= MAX_OUTPUT_CHARS then
					table.insert(output, { level = level, message = msg })
					chars = chars + #msg
				else
					truncated = true
				end
				if forward then
					forward(...)
				end
			end
		end
		local env = setmetatable({
			print = capture("info", base.print),
			warn = capture("warn", base.warn),
			game = ctx.game,
			workspace = ctx.game:GetService("Workspace"),
			plugin = ctx.plugin,
		}, { __index = base })
		setfenv(fn, env)
		local function pack(...)
			return { n = select("#", ...), ... }
		end
		local res = pack(pcall(fn))
		local n = res.n
		if not res[1] then
			local lines = {}
			for _, o in ipairs(output) do
				table.insert(lines, (o.level == "warn" and "[warn] " or "") .. o.message)
			end
			local msg = "runtime error: " .. errorText(res[2])
			if #lines > 0 then
				msg = msg .. "\noutput before the error:\n" .. table.concat(lines, "\n")
			end
			error(msg, 0)
		end
		local returns = {}
		for i = 2, n do
			local v = res[i]
			if v == nil then
				returns[i - 1] = { type = "nil" }
			else
				returns[i - 1] = Values.encode(v)
			end
		end
		local out = { output = output, returns = returns }
		if truncated then
			out.truncated = true
			out.note = "output cut at " .. MAX_OUTPUT_LINES .. " lines / " .. MAX_OUTPUT_CHARS .. " characters"
		end
		return out
	end,
}

return T
