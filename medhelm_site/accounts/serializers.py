from __future__ import annotations

from rest_framework import serializers

from medhelm_site.accounts.models import ApiToken


class LoginSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)
    name = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")


class TokenSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id", read_only=True)
    user = serializers.CharField(source="user.get_username", read_only=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "user", "created", "expiry"]


class NewTokenSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The secret, shown this once.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


class LockedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    locked = serializers.BooleanField()
    unlocks_at = serializers.DateTimeField()
