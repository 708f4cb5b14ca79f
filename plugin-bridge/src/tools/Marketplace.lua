-- tools/Marketplace.lua - insert_model: loads a model from the Creator Store with InsertService
-- (LoadAsset, else game:GetObjects) by asset id, or by a search query (the first free model GetFreeModels returns),
-- and parents what it contains to `parent` (default Workspace), optionally moved to `position`.

local Paths = require(script.Parent.Parent.Paths)
local Values = require(script.Parent.Parent.Values)
local U = require(script.Parent.Util)

local T = {}

T.insert_model = {
	readOnly = false,
	run = function(args, ctx)
		local ins = U.svc(ctx, "InsertService")
		local assetId = args.asset_id
		local query = U.str(args, "query", true)
		local name
		if assetId == nil then
			if query == nil or query == "" then
				error("give asset_id (a number) or query (search words)", 0)
			end
			-- GetFreeModels is deprecated for GetFreeModelsAsync (InsertService.yaml); older
			-- Studios have only the former.
			local ok, pages = pcall(function()
				return ins:GetFreeModelsAsync(query, 0)
			end)
			if not ok then
				ok, pages = pcall(function()
					return ins:GetFreeModels(query, 0)
				end)
			end
			if not ok then
				error("search for \"" .. query .. "\" failed: " .. tostring(pages), 0)
			end
			local first = pages and pages[1] and pages[1].Results and pages[1].Results[1]
			if not first then
				error("no free model matches \"" .. query .. "\"; try other words or an asset_id", 0)
			end
			assetId = first.AssetId
			name = first.Name
		end
		if type(assetId) ~= "number" or assetId ~= math.floor(assetId) or assetId <= 0 then
			error("asset_id must be a positive integer", 0)
		end
		local parent = U.resolve(ctx, U.str(args, "parent", true) or "Workspace")
		local position
		if args.position ~= nil then
			position = Values.decode(args.position, "Vector3", ctx.game)
		end
		-- LoadAsset is limited to assets the place's creator may use; plugins may also load
		-- public Creator Store assets with game:GetObjects, so that is the fallback.
		local items
		local ok, container = pcall(function()
			return ins:LoadAsset(assetId)
		end)
		if ok then
			items = container:GetChildren()
		else
			local okG, objects = pcall(function()
				return ctx.game:GetObjects("rbxassetid://" .. string.format("%d", assetId))
			end)
			if not okG or type(objects) ~= "table" or #objects == 0 then
				error("could not load asset " .. assetId .. ": " .. tostring(container)
					.. " (only free/public assets or assets you own can be inserted)", 0)
			end
			items = objects
		end
		local inserted = {}
		for _, child in ipairs(items) do
			if position and child:IsA("PVInstance") then
				child:PivotTo(CFrame.new(position.X, position.Y, position.Z))
			end
			child.Parent = parent
			table.insert(inserted, Paths.format(child))
		end
		if ok then
			container:Destroy()
		end
		return { assetId = assetId, name = name, inserted = inserted }
	end,
}

return T
