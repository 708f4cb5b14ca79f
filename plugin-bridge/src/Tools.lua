-- Tools.lua - every tool the plugin runs, by name.
--
--   Tools.get(name)  -> handler or nil
--   Tools.names()    -> sorted list of tool names
--
-- A handler is { readOnly = bool, recording = bool|nil, run = function(args, ctx) -> result }.
--   args    the tool's arguments (names exactly as in common/tools/studio-*.json)
--   ctx     { game = DataModel, services = {Name = service} (optional; default
--           game:GetService), plugin = plugin (optional: settings for stop_play),
--           env = table (optional: globals execute_luau code sees) }
--   result  plain JSON-able data; failures raise error(message, 0) with a message a model can
--           act on.
-- The runtime wraps each write tool (readOnly = false) in one ChangeHistoryService recording,
-- except handlers with recording = false (undo/redo and the play-test tools), and runs
-- read-only tools concurrently. Handlers never record themselves.
--
-- Modules are required the Roblox way (script.Parent...), which Rojo, the bundle and the
-- lua5.1 test loader (tests/fake/init.lua) all resolve.

local GROUPS = {
	require(script.Parent.tools.Instances),
	require(script.Parent.tools.Properties),
	require(script.Parent.tools.Objects),
	require(script.Parent.tools.Scripts),
	require(script.Parent.tools.Attributes),
	require(script.Parent.tools.Tags),
	require(script.Parent.tools.Selection),
	require(script.Parent.tools.Execute),
	require(script.Parent.tools.Playtest),
	require(script.Parent.tools.Marketplace),
	require(script.Parent.tools.History),
	require(script.Parent.tools.Capture),
}

local byName = {}
local names = {}
for _, group in ipairs(GROUPS) do
	for name, handler in pairs(group) do
		if byName[name] then
			error("Tools: duplicate tool " .. name)
		end
		byName[name] = handler
		table.insert(names, name)
	end
end
table.sort(names)

local Tools = {}

function Tools.get(name)
	return byName[name]
end

function Tools.names()
	local out = {}
	for i, n in ipairs(names) do
		out[i] = n
	end
	return out
end

return Tools
