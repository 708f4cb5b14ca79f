-- tools/Execute.lua - execute_luau: runs Luau in the plugin (edit DataModel) with loadstring.
-- print and warn are captured (and still reach Studio's output); the result is
--   {output = [{level = "info"|"warn", message}], returns = [value, ...],
--    truncated?, total? = {lines, characters}}
-- with returned values in the tagged encoding (Instances as paths, tables recursively). The
-- output kept is capped by max_output characters (and MAX_OUTPUT_LINES lines); past the cap a
-- line is cut or dropped, and the answer says truncated with the total printed.
-- A compile or runtime error fails the call; the message includes the output printed so far.
-- Runs as one ChangeHistoryService recording like any write tool, so Ctrl+Z undoes it.

local Values = require(script.Parent.Parent.Values)
local Globals = require(script.Parent.Parent.Globals)
local U = require(script.Parent.Util)

local MAX_CODE = 200000
local MAX_OUTPUT_LINES = 1000
local DEFAULT_OUTPUT_CHARS = 20000
local MAX_OUTPUT_CHARS = 1000000

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
		local maxChars = U.int(args, "max_output", DEFAULT_OUTPUT_CHARS, 100, MAX_OUTPUT_CHARS)
		local output, chars, truncated = {}, 0, false
		local printedLines, printedChars = 0, 0
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
				printedLines = printedLines + 1
				printedChars = printedChars + #msg
				if #output < MAX_OUTPUT_LINES and chars < maxChars then
					if chars + #msg > maxChars then
						msg = string.sub(msg, 1, maxChars - chars) -- bytes: a UTF-8 character may be cut
						truncated = true
					end
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
			if truncated then
				msg = msg .. "\n(output cut at max_output=" .. maxChars .. ": " .. printedLines .. " lines, "
					.. printedChars .. " characters were printed)"
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
			out.total = { lines = printedLines, characters = printedChars }
			out.note = "output cut at max_output=" .. maxChars .. " characters (or " .. MAX_OUTPUT_LINES
				.. " lines): " .. printedLines .. " lines, " .. printedChars .. " characters were printed;"
				.. " raise max_output (up to " .. MAX_OUTPUT_CHARS .. ") or print less"
		end
		return out
	end,
}

return T
