-- tools/PlayStop.lua - how the edit copy of the plugin asks the test server's copy to end a test
-- (StudioTestService:EndTest works only in the server DataModel), and the mode of a DataModel.
-- Not a tool group.
--
--   edit copy:   PlayStop.request(plugin, HttpService, nonce, editId)
--                writes {token, nonce, target, at} to the setting and reads it back
--   server copy: local stop = PlayStop.watch(plugin, StudioTestService)
--                checks the setting once a second; call stop() to end the watch
--
-- Plugin settings are shared by every copy of the plugin in every open Studio window, and a
-- GetSetting/SetSetting may silently fail while several copies use them (Plugin.yaml). So a
-- request is addressed and dated: a test Runbox started carries {runbox = {nonce, parent}} in
-- its test arguments, and its server copy honours only a request with that nonce (even one
-- written before the watch began: a stop right after a start is not lost); a test the user
-- started honours only requests without a nonce written after the watch began. A request read
-- as nil (a failed read) is simply read again a second later.

local PlayStop = {}

PlayStop.SETTING = "RunboxStopPlayRequest"
PlayStop.INTERVAL = 1
PlayStop.SLACK = 2 -- seconds: a user test honours requests this much older than its watch

-- {mode = "edit" | "run" | "play_server" | "play_client", paused}: "edit" only while IsEdit();
-- a test that is neither IsEdit nor IsRunning is paused (RunService.yaml).
function PlayStop.mode(run)
	if run:IsEdit() then
		return { mode = "edit", paused = false }
	end
	local paused = not run:IsRunning()
	if run:IsRunMode() then
		return { mode = "run", paused = paused }
	end
	return { mode = run:IsServer() and "play_server" or "play_client", paused = paused }
end

-- The runbox part of the running test's arguments ({nonce, parent, kind}), or nil for a test
-- the user started (or outside a test).
function PlayStop.testArgs(sts)
	local ok, args = pcall(function()
		return sts:GetTestArgs()
	end)
	if ok and type(args) == "table" and type(args.runbox) == "table" then
		return args.runbox
	end
	return nil
end

function PlayStop.request(plugin, http, nonce, target)
	local token = http:GenerateGUID(false)
	local req = { token = token, nonce = nonce, target = target, at = os.time() }
	for _ = 1, 3 do
		pcall(function()
			plugin:SetSetting(PlayStop.SETTING, req)
		end)
		local ok, back = pcall(function()
			return plugin:GetSetting(PlayStop.SETTING)
		end)
		if ok and type(back) == "table" and back.token == token then
			return token
		end
	end
	error("could not write the stop request to the plugin settings (another Studio window may be"
		.. " writing them); retry stop_play", 0)
end

local function wanted(req, nonce, since, seen)
	if type(req) ~= "table" or type(req.token) ~= "string" or req.token == seen then
		return false
	end
	if nonce ~= nil then
		return req.nonce == nonce
	end
	return req.nonce == nil and type(req.at) == "number" and req.at >= since - PlayStop.SLACK
end

function PlayStop.watch(plugin, sts)
	local info = PlayStop.testArgs(sts)
	local nonce = info and info.nonce or nil
	local since = os.time()
	local active = true
	local function read()
		local ok, v = pcall(function()
			return plugin:GetSetting(PlayStop.SETTING)
		end)
		return ok and v or nil
	end
	-- A request for a test without a nonce that is already there is an old one; one for our
	-- nonce is ours, whenever it was written.
	local first = read()
	local seen = type(first) == "table" and nonce == nil and first.token or nil
	task.spawn(function()
		while active do
			local now = read()
			if active and wanted(now, nonce, since, seen) then
				active = false
				pcall(function()
					sts:EndTest({ stoppedBy = "stop_play" })
				end)
				break
			end
			task.wait(PlayStop.INTERVAL)
		end
	end)
	return function()
		active = false
	end
end

return PlayStop
