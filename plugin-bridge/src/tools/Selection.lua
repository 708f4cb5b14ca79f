-- tools/Selection.lua - what the user has selected in Studio's Explorer.

local U = require(script.Parent.Util)
local Paging = require(script.Parent.Paging)

local T = {}

T.get_selection = {
	readOnly = true,
	run = function(args, ctx)
		local pager = Paging.new(U, args, 200, 2000)
		for _, inst in ipairs(U.svc(ctx, "Selection"):Get()) do
			pager:add(function()
				return U.describe(inst)
			end)
		end
		return pager:finish({}, "selection", "selected instances")
	end,
}

return T
