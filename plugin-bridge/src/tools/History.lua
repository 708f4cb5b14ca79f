-- tools/History.lua - Studio's undo history (ChangeHistoryService). Each write tool call of the
-- plugin is one recording, so undo takes back exactly one tool call. These two run outside any
-- recording (recording = false).

local U = require(script.Parent.Util)

local T = {}

T.undo = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		U.svc(ctx, "ChangeHistoryService"):Undo()
		return { done = "undo" }
	end,
}

T.redo = {
	readOnly = false,
	recording = false,
	run = function(args, ctx)
		U.svc(ctx, "ChangeHistoryService"):Redo()
		return { done = "redo" }
	end,
}

return T
