-- tools/History.lua - Studio's undo history (ChangeHistoryService). Each write tool call of the
-- plugin is one recording, so undo takes back exactly one tool call. These two run outside any
-- recording (recording = false).
--
-- The engine's Undo/Redo raise when there is nothing left to undo or redo (and during a play
-- test), so the handlers ask GetCanUndo/GetCanRedo first and answer {done = false, reason}
-- instead of failing with the engine's raw error. The history is shared with the user's own
-- edits: the answer names the step (waypoint) that was undone, so a caller can tell a Runbox
-- step ("Runbox: set_property") from one of the user's.

local U = require(script.Parent.Util)

local function step(ctx, can, act, what)
	local chs = U.svc(ctx, "ChangeHistoryService")
	local ok, able, name = pcall(function()
		return chs[can](chs)
	end)
	if ok and not able then
		return { done = false, reason = "nothing to " .. what }
	end
	local okAct, err = pcall(function()
		chs[act](chs)
	end)
	if not okAct then
		error("could not " .. what .. ": " .. tostring(err):gsub("^.-:%d+: ", "")
			.. " (Studio cannot " .. what .. " during a play test)", 0)
	end
	return { done = true, step = ok and name ~= "" and name or nil }
end

local T = {}

T.undo = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		return step(ctx, "GetCanUndo", "Undo", "undo")
	end,
}

T.redo = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		return step(ctx, "GetCanRedo", "Redo", "redo")
	end,
}

return T
