-- tools/Util.lua - helpers shared by the tool groups (not a group itself): services from ctx,
-- path resolution, argument checks, instance summaries, script source through
-- ScriptEditorService, and line splitting that round-trips exactly.

local Paths = require(script.Parent.Parent.Paths)

local U = {}

-- A service: ctx.services[name] (tests inject fakes there) or game:GetService(name).
function U.svc(ctx, name)
	if ctx.services then
		local s = ctx.services[name]
		if s then
			return s
		end
	end
	return ctx.game:GetService(name)
end

function U.resolve(ctx, path)
	return Paths.resolve(ctx.game, path)
end

-- The argument `name` checked to be of Lua type `want` (described as `what`): nil when it is
-- absent and optional, else an error naming it.
local function typed(args, name, optional, want, what)
	local v = args[name]
	if v == nil then
		if optional then
			return nil
		end
		error("missing argument \"" .. name .. "\"", 0)
	end
	if type(v) ~= want then
		error("argument \"" .. name .. "\" must be " .. what, 0)
	end
	return v
end

-- The argument `name` as a string, or an error naming it.
function U.str(args, name, optional)
	return typed(args, name, optional, "string", "a string")
end

-- An integer argument with default and bounds (values outside are clamped).
function U.int(args, name, default, lo, hi)
	local v = args[name]
	if v == nil then
		return default
	end
	if type(v) ~= "number" or v ~= math.floor(v) then
		error("argument \"" .. name .. "\" must be an integer", 0)
	end
	if v < lo then
		return lo
	end
	if v > hi then
		return hi
	end
	return v
end

-- The argument `name` as an array (a Lua table), or an error naming it.
function U.list(args, name, optional)
	return typed(args, name, optional, "table", "an array")
end

function U.describe(inst)
	return { name = inst.Name, className = inst.ClassName, path = Paths.format(inst), children = #inst:GetChildren() }
end

function U.isScript(inst)
	return inst:IsA("LuaSourceContainer")
end

function U.script(ctx, path)
	local inst = U.resolve(ctx, path)
	if not U.isScript(inst) then
		error(Paths.format(inst) .. " is a " .. inst.ClassName .. ", not a Script, LocalScript or ModuleScript", 0)
	end
	return inst
end

-- The source the editor shows (drafts and open editors included).
function U.getSource(ctx, scr)
	local ses = U.svc(ctx, "ScriptEditorService")
	return ses:GetEditorSource(scr)
end

-- Line endings as Luau and the editor keep them: "\r\n" and lone "\r" become "\n".
function U.normalizeNewlines(text)
	return (string.gsub(string.gsub(text, "\r\n", "\n"), "\r", "\n"))
end

-- Replaces the source through the editor so drafts and open documents agree. The text is
-- stored with "\n" line endings, and the read-back compares that way too: an editor that
-- normalises "\r\n" must not turn a successful write into "did not take the new source".
function U.setSource(ctx, scr, text)
	text = U.normalizeNewlines(text)
	local ses = U.svc(ctx, "ScriptEditorService")
	local ok, err = pcall(function()
		ses:UpdateSourceAsync(scr, function()
			return text
		end)
	end)
	if not ok then
		error("could not update " .. Paths.format(scr) .. ": " .. tostring(err)
			.. " (nothing was changed; if the script is open in a collaborative session, retry)", 0)
	end
	local now = ses:GetEditorSource(scr)
	if type(now) ~= "string" or U.normalizeNewlines(now) ~= text then
		error("the editor did not take the new source of " .. Paths.format(scr)
			.. " (it may be locked by a collaborator); read it back before retrying", 0)
	end
end

-- Splits text into lines; join(split(s)) == s for every s.
function U.splitLines(text)
	local lines = {}
	local start = 1
	while true do
		local i = text:find("\n", start, true)
		if not i then
			table.insert(lines, text:sub(start))
			break
		end
		table.insert(lines, text:sub(start, i - 1))
		start = i + 1
	end
	return lines
end

function U.joinLines(lines)
	return table.concat(lines, "\n")
end

-- Studio and plugin internals under game: other plugins' widgets and scripts, Studio's own UI.
-- Whole-game walks skip them; a path inside them (asked for by name) is walked as usual.
U.INTERNAL = {
	CoreGui = true, CorePackages = true, PluginGuiService = true, PluginDebugService = true,
	RobloxPluginGuiService = true, StudioService = true, StudioData = true, RobloxReplicatedStorage = true,
	TestService = false,
}

-- A walk yields (task.wait()) after every WALK_BATCH instances, so the poll loop and other
-- commands keep running while it visits a large place (plugin Lua runs on one thread, and the
-- daemon drops a plugin that has not polled for 20 s).
U.WALK_BATCH = 1000

local function childrenOf(inst)
	local ok, children = pcall(function()
		return inst:GetChildren()
	end)
	if ok then
		return children
	end
	return {}
end

-- Whether a child of game is an internal service (its class name, read safely).
function U.isInternal(inst)
	local ok, cls = pcall(function()
		return inst.ClassName
	end)
	return not ok or U.INTERNAL[cls] == true
end

-- Walks root's descendants depth-first in document order, calling visit(inst) until it
-- returns true (stop). Returns whether it stopped early. Each visit runs in pcall (a locked
-- instance raises on .Name or :IsA: it is skipped); under game the internal services are
-- skipped.
function U.walk(root, visit)
	local stack = { root }
	local n = 0
	local isGame = (pcall(function() return root.ClassName == "DataModel" end)) and root.ClassName == "DataModel"
	while #stack > 0 do
		local inst = table.remove(stack)
		local children = childrenOf(inst)
		for i = #children, 1, -1 do
			if not (isGame and inst == root and U.isInternal(children[i])) then
				table.insert(stack, children[i])
			end
		end
		if inst ~= root then
			local ok, stop = pcall(visit, inst)
			if ok and stop then
				return true
			end
			n = n + 1
			if n % U.WALK_BATCH == 0 then
				task.wait()
			end
		end
	end
	return false
end

-- The root for searches: a path, or the whole game.
function U.root(ctx, args)
	local p = args.path
	if p == nil or p == "" or p == "game" then
		return ctx.game
	end
	return U.resolve(ctx, p)
end

-- Base64 (capture_screenshot's pixels).
local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local B64C = {}
for i = 1, 64 do
	B64C[i - 1] = string.sub(B64, i, i)
end

-- Base64 (RFC 4648, padded) of the byte string s, with arithmetic only (Lua 5.1 has no bit
-- operators); yields every 48 KiB so the poll loop keeps running on a large picture.
function U.base64(s, yield)
	local out, n = {}, #s
	for i = 1, n - 2, 3 do
		local a, b, c = string.byte(s, i, i + 2)
		local v = a * 65536 + b * 256 + c
		out[#out + 1] = B64C[math.floor(v / 262144)] .. B64C[math.floor(v / 4096) % 64]
			.. B64C[math.floor(v / 64) % 64] .. B64C[v % 64]
		if yield and i % 49152 == 1 and i > 1 then
			yield()
		end
	end
	local rest = n % 3
	if rest == 1 then
		local v = string.byte(s, n) * 65536
		out[#out + 1] = B64C[math.floor(v / 262144)] .. B64C[math.floor(v / 4096) % 64] .. "=="
	elseif rest == 2 then
		local a, b = string.byte(s, n - 1, n)
		local v = a * 65536 + b * 256
		out[#out + 1] = B64C[math.floor(v / 262144)] .. B64C[math.floor(v / 4096) % 64]
			.. B64C[math.floor(v / 64) % 64] .. "="
	end
	return table.concat(out)
end

return U
